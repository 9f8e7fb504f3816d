// Preloaded into a node (NODE_OPTIONS=--import) to give it a clock that disagrees with the database's by
// METACLAW_TEST_CLOCK_SKEW_MS: what a team member's machine with a wrong clock looks like.
const skew = Number(process.env.METACLAW_TEST_CLOCK_SKEW_MS ?? '0');
const realNow = Date.now;
Date.now = () => realNow() + skew;
