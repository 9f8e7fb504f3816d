import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { parseSecretRules, redactSecrets, SecretScanner, secretRules } from '../src/text/index.js';
import { REPO } from './support/proxy.js';
import { ALNUM, AWS_SECRET, BASE32, BASE64, fake, GITHUB_TOKEN, HEX, PEM_BODY, PRIVATE_KEY, URLSAFE } from './support/secrets.js';

/** Per rule: texts that hold a secret, and the secret each must lose. Every shipped rule has one. */
const POSITIVE: Record<string, Array<[text: string, secret: string]>> = {
  'private-key': [
    [`here is the deploy key:\n${PRIVATE_KEY}\nthanks`, PEM_BODY[1]!],
    [`{"type": "service_account", "private_key": "-----BEGIN PRIVATE KEY-----\\n${PEM_BODY[0]}\\n-----END PRIVATE KEY-----\\n"}`, PEM_BODY[0]!],
    [`the message was cut: -----BEGIN OPENSSH PRIVATE KEY-----\n${PEM_BODY[2]}`, PEM_BODY[2]!],
  ],
  'aws-access-key-id': [[`aws_access_key_id = AKIA${fake(BASE32, 16, 5)}`, `AKIA${fake(BASE32, 16, 5)}`]],
  'aws-secret-access-key': [
    [`AWS_SECRET_ACCESS_KEY=${AWS_SECRET}`, AWS_SECRET],
    [`My AWS secret key is ${fake(BASE64, 40, 6)}, keep it safe`, fake(BASE64, 40, 6)],
    [`[default]\naws_access_key_id = AKIA${fake(BASE32, 16, 7)}\naws_secret_access_key = ${fake(BASE64, 40, 8)}`, fake(BASE64, 40, 8)],
  ],
  'aws-bedrock-api-key': [[`ABSK${fake(BASE64, 120, 9)}`, fake(BASE64, 120, 9)]],
  'github-token': [
    [`git remote set-url origin https://${GITHUB_TOKEN}@github.com/o/r`, GITHUB_TOKEN],
    [`gho_${fake(ALNUM, 36, 10)}`, fake(ALNUM, 36, 10)],
    [`ghs_${fake(ALNUM, 36, 11)}`, fake(ALNUM, 36, 11)],
    // JSON text (tool-call arguments): the token right after an escaped newline
    [`{"path": ".env", "content": "USER=ann\\nghu_${fake(ALNUM, 36, 72)}\\n"}`, fake(ALNUM, 36, 72)],
  ],
  'github-fine-grained-pat': [[`GH_TOKEN github_pat_${fake(ALNUM, 22, 12)}_${fake(ALNUM, 59, 13)}`, fake(ALNUM, 59, 13)]],
  'gitlab-token': [[`glpat-${fake(URLSAFE, 20, 14)}`, fake(URLSAFE, 20, 14)]],
  'anthropic-api-key': [[`ANTHROPIC_API_KEY=sk-ant-api03-${fake(URLSAFE, 93, 15)}AA`, fake(URLSAFE, 93, 15)]],
  'openrouter-api-key': [[`sk-or-v1-${fake(HEX, 64, 16)}`, fake(HEX, 64, 16)]],
  'openai-api-key': [
    [`use sk-proj-${fake(URLSAFE, 48, 17)} for now`, fake(URLSAFE, 48, 17)],
    [`key: sk-${fake(ALNUM, 48, 18)}`, fake(ALNUM, 48, 18)],
  ],
  'groq-api-key': [[`gsk_${fake(ALNUM, 52, 19)}`, fake(ALNUM, 52, 19)]],
  'xai-api-key': [[`xai-${fake(ALNUM, 80, 20)}`, fake(ALNUM, 80, 20)]],
  'perplexity-api-key': [[`pplx-${fake(ALNUM, 48, 21)}`, fake(ALNUM, 48, 21)]],
  'tavily-api-key': [[`tvly-${fake(ALNUM, 32, 22)}`, fake(ALNUM, 32, 22)]],
  'replicate-api-token': [[`r8_${fake(ALNUM, 37, 23)}`, fake(ALNUM, 37, 23)]],
  'huggingface-token': [[`HF_TOKEN=hf_${fake(ALNUM, 34, 24)}`, fake(ALNUM, 34, 24)]],
  'slack-token': [[`xoxb-1234567890-1234567890123-${fake(ALNUM, 24, 25)}`, fake(ALNUM, 24, 25)]],
  'slack-webhook-url': [[`https://hooks.slack.com/services/T0A1B2C3D/B0A1B2C3D/${fake(ALNUM, 24, 26)}`, fake(ALNUM, 24, 26)]],
  'stripe-key': [
    [`stripe.api_key = "sk_live_${fake(ALNUM, 24, 27)}"`, fake(ALNUM, 24, 27)],
    [`whsec_${fake(BASE64, 32, 28)}`, fake(BASE64, 32, 28)],
  ],
  'google-api-key': [[`GEMINI key AIza${fake(URLSAFE, 35, 29)}`, fake(URLSAFE, 35, 29)]],
  'google-oauth-client-secret': [[`GOCSPX-${fake(URLSAFE, 28, 30)}`, fake(URLSAFE, 28, 30)]],
  'npm-token': [[`//registry.npmjs.org/:_authToken=npm_${fake(ALNUM, 36, 31)}`, fake(ALNUM, 36, 31)]],
  'pypi-token': [[`pypi-AgEIcHlwaS5vcmc${fake(URLSAFE, 60, 32)}`, fake(URLSAFE, 60, 32)]],
  'azure-storage-account-key': [
    [`DefaultEndpointsProtocol=https;AccountName=acme;AccountKey=${fake(BASE64, 86, 33)}==;EndpointSuffix=core.windows.net`, fake(BASE64, 86, 33)],
  ],
  'azure-shared-access-key': [
    [`Endpoint=sb://acme.servicebus.windows.net/;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=${fake(BASE64, 43, 34)}=`, fake(BASE64, 43, 34)],
  ],
  'azure-sas-signature': [[`https://acme.blob.core.windows.net/c/b.txt?sv=2022-11-02&se=2026-12-01&sig=${fake(ALNUM, 43, 35)}%3D`, fake(ALNUM, 43, 35)]],
  'azure-ad-client-secret': [[`client secret abc8Q~${fake(`${ALNUM}_~.-`, 34, 36)} for the app`, fake(`${ALNUM}_~.-`, 34, 36)]],
  'twilio-api-key': [[`SK${fake(HEX, 32, 37)}`, fake(HEX, 32, 37)]],
  'twilio-auth-token': [[`TWILIO_AUTH_TOKEN=${fake(HEX, 32, 38)}`, fake(HEX, 32, 38)]],
  'sendgrid-api-key': [[`SG.${fake(URLSAFE, 22, 39)}.${fake(URLSAFE, 43, 40)}`, fake(URLSAFE, 43, 40)]],
  'mailgun-api-key': [[`key-${fake(HEX, 32, 41)}`, fake(HEX, 32, 41)]],
  'mailgun-signing-key': [[`MAILGUN_SIGNING_KEY=${fake(HEX, 32, 42)}-${fake(HEX, 8, 43)}-${fake(HEX, 8, 44)}`, fake(HEX, 32, 42)]],
  'discord-bot-token': [[`bot.run("M${fake(URLSAFE, 25, 45)}.${fake(URLSAFE, 6, 46)}.${fake(URLSAFE, 38, 47)}")`, fake(URLSAFE, 38, 47)]],
  'discord-webhook-url': [[`https://discord.com/api/webhooks/123456789012345678/${fake(URLSAFE, 68, 48)}`, fake(URLSAFE, 68, 48)]],
  'telegram-bot-token': [[`123456789:AA${fake(URLSAFE, 33, 49)}`, fake(URLSAFE, 33, 49)]],
  'digitalocean-token': [[`dop_v1_${fake(HEX, 64, 50)}`, fake(HEX, 64, 50)]],
  'shopify-token': [[`shpat_${fake(HEX, 32, 51)}`, fake(HEX, 32, 51)]],
  'databricks-token': [[`dapi${fake(HEX, 32, 52)}`, fake(HEX, 32, 52)]],
  'hashicorp-vault-token': [[`VAULT_TOKEN=hvs.${fake(URLSAFE, 90, 53)}`, fake(URLSAFE, 90, 53)]],
  'doppler-token': [[`dp.pt.${fake(ALNUM, 43, 54)}`, fake(ALNUM, 43, 54)]],
  'linear-api-key': [[`lin_api_${fake(ALNUM, 40, 55)}`, fake(ALNUM, 40, 55)]],
  'notion-token': [[`ntn_${fake('0123456789', 11, 56)}${fake(ALNUM, 35, 57)}`, fake(ALNUM, 35, 57)]],
  'sentry-token': [[`sntryu_${fake(HEX, 64, 58)}`, fake(HEX, 64, 58)]],
  'grafana-token': [[`glsa_${fake(ALNUM, 32, 59)}_${fake(HEX, 8, 60)}`, fake(ALNUM, 32, 59)]],
  'heroku-api-key': [[`HRKU-AA${fake(URLSAFE, 58, 61)}`, fake(URLSAFE, 58, 61)]],
  'heroku-api-key-uuid': [['HEROKU_API_KEY=0f3a9c2e-7b41-4d8a-9e6f-2c5b8a1d4e70', '0f3a9c2e-7b41-4d8a-9e6f-2c5b8a1d4e70']],
  'postman-api-key': [[`PMAK-${fake(HEX, 24, 62)}-${fake(HEX, 34, 63)}`, fake(HEX, 34, 63)]],
  'square-token': [[`sq0atp-${fake(URLSAFE, 22, 64)}`, fake(URLSAFE, 22, 64)]],
  'age-secret-key': [[`AGE-SECRET-KEY-1${fake('QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L', 58, 65)}`, fake('QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L', 58, 65)]],
  jwt: [[`Cookie: session=eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkFubiJ9.${fake(URLSAFE, 43, 66)}`, fake(URLSAFE, 43, 66)]],
  'url-credentials': [
    ['DATABASE_URL=postgres://admin:s3cr3tP4ss@db.internal:5432/app', 's3cr3tP4ss'],
    ['git clone https://ann:hunter2hunter@git.example.com/team/repo.git', 'hunter2hunter'],
  ],
  'bearer-token': [[`curl -H "Authorization: Bearer ${fake(URLSAFE, 40, 67)}" https://api.example.com`, fake(URLSAFE, 40, 67)]],
  'generic-secret': [
    [`api_key = "${fake(ALNUM, 32, 68)}"`, fake(ALNUM, 32, 68)],
    [`{"client_secret": "${fake(URLSAFE, 40, 69)}", "client_id": "web"}`, fake(URLSAFE, 40, 69)],
    [`export PAYMENTS_SERVICE_TOKEN=${fake(ALNUM, 28, 70)}`, fake(ALNUM, 28, 70)],
    [`the staging API key is ${fake(ALNUM, 24, 71)}`, fake(ALNUM, 24, 71)],
  ],
  'generic-password': [
    ['db:\n  user: app\n  password: hunter2hunter\n', 'hunter2hunter'],
    ['SMTP_PASS=Tr0ub4dor&3 npm start', 'Tr0ub4dor&3'],
    ['the wifi password is correct-horse-42, ask Ann', 'correct-horse-42'],
  ],
  'chinese-password': [['我的服务器密码是 abc12345，别告诉别人', 'abc12345']],
};

/** Ordinary text, including what looks close to a secret but is not one. */
const NEGATIVE = [
  'Please rename the helper in src/utils.ts to formatDate and update its callers.',
  'The secret to a good commit is a short subject line; the token budget is 4096.',
  'commit 3f2c9a105b7e4c1d9a2f0e8d7c6b5a41deadbeef fixed the flaky test',
  'sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08',
  'session 3f2c9a10-5b7e-4c1d-9a2f-0e8d7c6b5a41 ended after 30 minutes',
  '"max_completion_tokens": 4096, "max_tokens": 1024, "total_tokens": 123456789012',
  'const token = process.env.GITHUB_TOKEN;',
  'password = getPassword()',
  'api_key = os.environ["OPENAI_API_KEY"]',
  'interface Login { password?: string; token: string }',
  'the password is incorrect, try again',
  'ask the task-manager-configuration-file owner about the risk-assessment-spreadsheet-2024',
  'See https://example.com:8443/docs/v2@latest and ssh git@github.com:team/repo.git',
  'We ship to Asia and Malaysia; the Acca exam is in May.',
  'Set AWS_REGION=eu-west-1 and read the AWS docs on IAM roles for service accounts.',
  'Use `password: ${DB_PASSWORD}` in the compose file and `token: <your token>` in the docs.',
];

describe('secret rules', () => {
  test('the shipped rules load and every rule has a positive sample here', () => {
    const ids = secretRules().map((rule) => rule.id);
    assert.ok(ids.length >= 40);
    assert.deepEqual(
      ids.filter((id) => !(id in POSITIVE)),
      [],
      'a rule without a sample in this test',
    );
    assert.deepEqual(
      Object.keys(POSITIVE).filter((id) => !ids.includes(id)),
      [],
      'a sample for a rule that does not exist',
    );
  });

  test('every sample loses its secret and shows which rule took it, the text around it stays', () => {
    for (const [id, samples] of Object.entries(POSITIVE)) {
      for (const [text, secret] of samples) {
        assert.ok(text.includes(secret), `${id}: the sample holds its secret`);
        const redacted = redactSecrets(text);
        assert.equal(redacted.includes(secret), false, `${id}: ${JSON.stringify(text)} → ${JSON.stringify(redacted)}`);
        assert.ok(redacted.includes(`[redacted ${id}]`), `${id}: ${JSON.stringify(redacted)}`);
        assert.equal(redactSecrets(redacted), redacted, `${id}: redacting again changes nothing`);
      }
    }
    assert.equal(redactSecrets(`AWS_SECRET_ACCESS_KEY=${AWS_SECRET} # prod`), 'AWS_SECRET_ACCESS_KEY=[redacted aws-secret-access-key] # prod');
  });

  test('ordinary text, a git SHA, a UUID, code and placeholders are left alone', () => {
    for (const text of NEGATIVE) assert.equal(redactSecrets(text), text);
  });

  test('the texts MetaClaw ships (starter skills, prompts) are left alone', () => {
    const starter = join(REPO, 'skills-starter');
    const files = [
      ...readdirSync(starter).map((name) => join(starter, name, 'SKILL.md')),
      ...readdirSync(join(REPO, 'prompts')).map((name) => join(REPO, 'prompts', name)),
    ];
    assert.ok(files.length > 10);
    for (const file of files) {
      const text = readFileSync(file, 'utf8');
      assert.equal(redactSecrets(text), text, file);
    }
  });

  test('text without any rule keyword runs no rule at all', () => {
    const scanner = new SecretScanner(secretRules());
    assert.deepEqual(scanner.candidates('Rename the helper and run the tests.'), []);
    assert.deepEqual(
      scanner.candidates('GitHub PATs start with GHP_').map((rule) => rule.id),
      ['github-token'],
      'keywords match in any case',
    );
    // A keyword inside a longer one still counts: "sk-ant-" holds "sk-" and "sk".
    assert.deepEqual(
      scanner.candidates('sk-ant-').map((rule) => rule.id),
      ['anthropic-api-key', 'openai-api-key', 'twilio-api-key'],
    );
  });

  test('a broken rules file is an error naming the rule, not a pattern that silently matches nothing', () => {
    const file = (rule: Record<string, unknown>, extra: Record<string, unknown> = {}) =>
      JSON.stringify({ about: 'x', version: 1, rules: [{ id: 'demo', description: 'd', regex: 'abc', keywords: ['abc'], ...rule }], ...extra });
    assert.throws(() => parseSecretRules(file({ regex: 'a(b' }), 'rules.json'), /rules\.json: rule demo: invalid regex/);
    assert.throws(() => parseSecretRules(file({ secretGroup: 2, regex: 'a(b)c' }), 'rules.json'), /rule demo: secretGroup 2 but the regex has 1 groups/);
    assert.throws(() => parseSecretRules(file({ regex: 'x{{missing}}' }), 'rules.json'), /rule demo: no fragment named \{\{missing\}\}/);
    assert.throws(() => parseSecretRules(file({ keywords: ['ABC'] }), 'rules.json'), /rules\.0\.keywords\.0: keywords are lower case/);
    assert.throws(() => parseSecretRules(file({ colour: 'red' }), 'rules.json'), /rules\.0/);
    assert.throws(
      () =>
        parseSecretRules('{"about":"x","version":1,"rules":[{"id":"a","description":"d","regex":"a"},{"id":"a","description":"d","regex":"b"}]}', 'rules.json'),
      /rule a: the id is used twice/,
    );
    assert.throws(() => parseSecretRules('not json', 'rules.json'), /rules\.json: not JSON/);
    const [rule] = parseSecretRules(file({ regex: 'key=({{value}})', secretGroup: 1, entropy: 2 }, { fragments: { value: '[a-z0-9]+' } }), 'rules.json');
    assert.equal(new SecretScanner([rule!]).redact('abc key=a1b2c3 key=aaaa'), 'abc key=[redacted demo] key=aaaa', 'fragment expanded, low-entropy value kept');
  });
});
