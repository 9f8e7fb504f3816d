import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { html } from './html.js';
import { PAGES } from './pages/index.js';
import { link, useRoute } from './router.js';
import './style.css';

type Theme = 'light' | 'dark' | 'system';

function useTheme(): [Theme, (theme: Theme) => void] {
  const [theme, setTheme] = useState<Theme>(() => (localStorage.getItem('metaclaw-theme') as Theme | null) ?? 'system');
  useEffect(() => {
    localStorage.setItem('metaclaw-theme', theme);
    if (theme === 'system') delete document.documentElement.dataset['theme'];
    else document.documentElement.dataset['theme'] = theme;
  }, [theme]);
  return [theme, setTheme];
}

function App() {
  const [path, ...params] = useRoute();
  const [theme, setTheme] = useTheme();
  const page = PAGES.find((candidate) => candidate.path === path);
  useEffect(() => {
    document.title = page ? `${page.title} · MetaClaw` : 'MetaClaw';
  }, [page]);
  const Component = page?.component;
  return html`
    <header class="top">
      <a class="brand" href=${link('overview')}>MetaClaw</a>
      <nav aria-label="Pages">
        ${PAGES.map((candidate) => html`<a href=${link(candidate.path)} aria-current=${candidate.path === path ? 'page' : undefined}>${candidate.title}</a>`)}
      </nav>
      <label class="theme">
        <span class="visually-hidden">Theme</span>
        <select value=${theme} onChange=${(event: Event) => setTheme((event.target as HTMLSelectElement).value as Theme)}>
          <option value="system">System theme</option>
          <option value="light">Light</option>
          <option value="dark">Dark</option>
        </select>
      </label>
    </header>
    <main>
      ${Component ? html`<${Component} params=${params} />` : html`<p class="error">No page “${path}”. <a href=${link('overview')}>Back to the overview</a>.</p>`}
    </main>
  `;
}

render(html`<${App} />`, document.getElementById('app')!);
