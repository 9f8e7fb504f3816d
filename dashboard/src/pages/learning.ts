import type { LearningView } from '../../../src/dashboard/views.js';
import { useMemo } from 'preact/hooks';
import { useJson } from '../api.js';
import { LineChart } from '../chart.js';
import { PageFrame } from '../components.js';
import { FailedJobs } from './failed-jobs.js';
import { count, when } from '../format.js';
import { html } from '../html.js';
import { link, routeQuery } from '../router.js';

/** What the page's data route answers (src/dashboard/learning.ts). */
type Learning = LearningView;

const RANGES = [7, 30, 90, 365];

export function LearningPage() {
  const days = Number(routeQuery().get('days') ?? 30);
  const loaded = useJson<Learning>(`/v1/dashboard/learning?days=${RANGES.includes(days) ? days : 30}`);
  const ranges = html`<span class="row" role="group" aria-label="Range">
    ${RANGES.map((range) => html`<a href=${`${link('learning')}?days=${range}`} aria-current=${range === days ? 'true' : undefined}>${range} days</a>`)}
  </span>`;
  return html`<${PageFrame} title="Learning" loaded=${loaded} actions=${ranges}>${(data: Learning) => html`<${Curves} data=${data} />`}<//>`;
}

function Curves({ data }: { data: Learning }) {
  const seconds = useMemo(() => data.days.map((day) => day / 1000), [data]);
  const library = useMemo(() => [{ label: 'skills', values: data.skills, color: '#3b82f6' }], [data]);
  const memories = useMemo(
    () => [
      { label: 'memories learned', values: data.memories.learned, color: '#10b981' },
      { label: 'standing instructions', values: data.memories.standing, color: '#f59e0b' },
    ],
    [data],
  );
  const rewardByDay = useMemo(() => {
    const byDay = new Map(data.judge.per_day.map((row) => [row.day, row.mean]));
    return [{ label: 'mean reward', values: data.days.map((day) => byDay.get(day) ?? null), color: '#8b5cf6', points: true }];
  }, [data]);
  const steps = useMemo(() => data.training.filter((step) => step.loss !== null), [data]);
  const lossX = useMemo(() => steps.map((step) => step.step), [steps]);
  const loss = useMemo(() => [{ label: 'loss', values: steps.map((step) => step.loss), color: '#ef4444', points: steps.length < 3 }], [steps]);
  const range: [number, number] = useMemo(() => [-1, 1], []);
  return html`
    <${FailedJobs} />
    <div class="charts">
      <${LineChart} title="Skills in the library" x=${seconds} series=${library} />
      <${LineChart} title="Memories" x=${seconds} series=${memories} />
      ${
        data.judge.per_day.length > 0
          ? html`<${LineChart} title="Judge reward per day" x=${seconds} series=${rewardByDay} yRange=${range} />`
          : html`<div class="chart"><p class="muted">No turn has been scored by the judge in this range (RL modes score turns).</p></div>`
      }
      ${
        steps.length > 0
          ? html`<${LineChart} title="Training loss per step" x=${lossX} series=${loss} time=${false} />`
          : html`<div class="chart"><p class="muted">No training step yet (modes rl and auto train once enough turns are scored).</p></div>`
      }
    </div>
    <h2>Judge reward per skill generation</h2>
    ${
      data.judge.per_generation.length === 0
        ? html`<p class="muted">No scored turns yet.</p>`
        : html`<ul class="bars" aria-label="Mean reward per skill generation">
            ${data.judge.per_generation.map(
              (row) =>
                html`<li data-generation=${row.generation}>
                  <span class="bar-label">generation ${row.generation}</span>
                  <span class="bar-track"
                    ><span class=${`bar ${row.mean < 0 ? 'negative' : ''}`} style=${{ width: `${Math.round(((row.mean + 1) / 2) * 100)}%` }}></span
                  ></span>
                  <span class="bar-value">${row.mean.toFixed(2)} (${count(row.scored)} turns)</span>
                </li>`,
            )}
          </ul>`
    }
    <h2>Training steps</h2>
    ${
      data.training.length === 0
        ? html`<p class="muted">None.</p>`
        : html`<div class="table-wrap">
            <table aria-label="Training steps">
              <thead>
                <tr>
                  <th class="num">Step</th>
                  <th>Status</th>
                  <th>Trigger</th>
                  <th class="num">Samples</th>
                  <th class="num">Loss</th>
                  <th>Finished</th>
                </tr>
              </thead>
              <tbody>
                ${data.training
                  .slice(-20)
                  .reverse()
                  .map(
                    (step) =>
                      html`<tr>
                        <td class="num">${step.step}</td>
                        <td>${step.status}</td>
                        <td>${step.trigger}</td>
                        <td class="num">${step.samples}</td>
                        <td class="num">${step.loss === null ? '—' : step.loss.toFixed(4)}</td>
                        <td>${step.finished_at === null ? '—' : when(new Date(step.finished_at).toISOString())}</td>
                      </tr>`,
                  )}
              </tbody>
            </table>
          </div>`
    }
    <h2>Scheduler windows</h2>
    <${Timeline} data=${data} />
  `;
}

/** The idle windows in the range, as segments on one strip, and the latest ones listed. */
function Timeline({ data }: { data: Learning }) {
  const start = data.days[0] ?? 0;
  const end = new Date(data.generated_at).getTime();
  const span = Math.max(1, end - start);
  if (data.windows.length === 0)
    return html`<p class="muted">No window recorded in this range (the scheduler runs in mode auto or with scheduler.enabled).</p>`;
  return html`
    <div class="timeline" role="img" aria-label=${`${data.windows.length} windows`}>
      ${data.windows.map((window) => {
        const from = Math.max(start, window.opened_at);
        const to = Math.min(end, window.closed_at ?? end);
        return html`<span
          class="window"
          data-window=${window.sources.join('+')}
          title=${`${when(new Date(window.opened_at).toISOString())} – ${window.closed_at ? when(new Date(window.closed_at).toISOString()) : 'open'}: ${window.sources.join(' + ')}`}
          style=${{ left: `${Math.min(99, ((from - start) / span) * 100)}%`, width: `${Math.max(1, ((to - from) / span) * 100)}%` }}
        ></span>`;
      })}
    </div>
    <div class="timeline-axis muted"><span>${when(new Date(start).toISOString())}</span><span>now</span></div>
    <div class="table-wrap">
      <table aria-label="Scheduler windows">
        <thead>
          <tr>
            <th>Opened</th>
            <th>Closed</th>
            <th>Held open by</th>
            <th>Why it closed</th>
          </tr>
        </thead>
        <tbody>
          ${data.windows
            .slice(-10)
            .reverse()
            .map(
              (window) =>
                html`<tr>
                  <td>${when(new Date(window.opened_at).toISOString())}</td>
                  <td>${window.closed_at === null ? 'still open' : when(new Date(window.closed_at).toISOString())}</td>
                  <td>${window.sources.join(', ')}</td>
                  <td>${window.close_reason ?? ''}</td>
                </tr>`,
            )}
        </tbody>
      </table>
    </div>
  `;
}
