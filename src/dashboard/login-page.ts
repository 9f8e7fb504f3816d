/** The one page served without the key: a form that asks for it (the dashboard's data needs it). */
export function loginPage(failed: boolean): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>MetaClaw: sign in</title><link rel="icon" href="data:,">
<style>
:root { color-scheme: light dark; font-family: system-ui, sans-serif; }
body { max-width: 26rem; margin: 12vh auto; padding: 0 1rem; }
input, button { font: inherit; padding: .5rem; width: 100%; box-sizing: border-box; margin-top: .5rem; }
.error { color: #c62828; }
</style></head>
<body>
<h1>MetaClaw</h1>
<p>This proxy requires its key (<code>proxy.api_key</code> or <code>METACLAW_PROXY_API_KEY</code>) to open the dashboard.</p>
${failed ? '<p class="error" role="alert">That key is not the proxy key.</p>' : ''}
<form method="post" action="/ui/login">
<label for="key">Proxy key</label>
<input id="key" name="key" type="password" autocomplete="current-password" required autofocus>
<button type="submit">Sign in</button>
</form>
</body></html>
`;
}
