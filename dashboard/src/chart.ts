import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { html } from './html.js';

export interface ChartSeries {
  label: string;
  values: Array<number | null>;
  color: string;
  /** draw points only (sparse data such as training steps) */
  points?: boolean;
}

/**
 * A theme colour as the canvas needs it, read when a chart is drawn: the palette's variables hold
 * `light-dark(…)`, which only an element's computed style resolves.
 */
function themeColor(name: string): string {
  const probe = document.createElement('span');
  probe.style.color = `var(${name})`;
  document.body.append(probe);
  const color = getComputedStyle(probe).color;
  probe.remove();
  return color || '#888';
}

/**
 * A uPlot line chart sized to its container (and resized with it). `x` is in seconds, as uPlot
 * wants; `time: false` for a plain number axis (training steps).
 */
export function LineChart(props: { title: string; x: number[]; series: ChartSeries[]; time?: boolean; height?: number; yRange?: [number, number] }) {
  const holder = useRef<HTMLDivElement>(null);
  const { title, x, series, time = true, height = 220, yRange } = props;
  useEffect(() => {
    const element = holder.current;
    if (!element) return;
    const axisColor = themeColor('--muted');
    const gridColor = themeColor('--line');
    const axis = { stroke: axisColor, grid: { stroke: gridColor, width: 1 }, ticks: { stroke: gridColor, width: 1 } };
    const options: uPlot.Options = {
      width: Math.max(200, element.clientWidth),
      height,
      scales: { x: { time }, ...(yRange ? { y: { range: yRange } } : {}) },
      axes: [axis, axis],
      legend: { show: true },
      series: [
        {},
        ...series.map((line) => ({
          label: line.label,
          stroke: line.color,
          width: 2,
          spanGaps: true,
          ...(line.points ? { paths: () => null, points: { show: true, size: 6, fill: line.color } } : {}),
        })),
      ],
    };
    const chart = new uPlot(options, [x, ...series.map((line) => line.values)] as uPlot.AlignedData, element);
    const resized = new ResizeObserver(() => chart.setSize({ width: Math.max(200, element.clientWidth), height }));
    resized.observe(element);
    return () => {
      resized.disconnect();
      chart.destroy();
    };
  }, [title, x, series, time, height, yRange]);
  return html`<figure class="chart" data-chart=${title}>
    <figcaption>${title}</figcaption>
    <div ref=${holder}></div>
  </figure>`;
}
