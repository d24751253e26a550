import { rateLimitHeaders, slidingWindowState } from '../../shared/model/rate-limits';

const NOW = 1_800_000_000_000;
/** An entry for a request `secondsAgo` before NOW (microseconds, with a tie-breaker). */
const entry = (secondsAgo: number) => (NOW - secondsAgo * 1000) * 1000 + 7;

describe('slidingWindowState', () => {
  it.each([
    ['one request just now', [0], { remaining: 59, resetSeconds: 60 }],
    ['the oldest counted is 42.3 s old', [0, 10, 42.3], { remaining: 57, resetSeconds: 18 }],
    ['the oldest counted is 59.001 s old', [0, 59.001], { remaining: 58, resetSeconds: 1 }],
    ['an entry exactly 60 s old no longer counts', [0, 1, 60], { remaining: 58, resetSeconds: 59 }],
    ['sixty within the window', Array.from({ length: 60 }, (_, i) => i * 0.5), { remaining: 0, resetSeconds: 31 }],
    ['entries past the sixtieth never count', [...Array.from({ length: 60 }, () => 30), 1, 2], { remaining: 0, resetSeconds: 30 }],
  ])('general: %s', (_, secondsAgo, expected) => {
    expect(slidingWindowState('general', secondsAgo.map(entry), NOW, false)).toEqual({ name: 'general', exceeded: false, ...expected });
  });

  it('deploy: counts five over 3,600 s and frees one when the oldest is an hour old', () => {
    const state = slidingWindowState('deploy', [0, 60, 600, 1800, 3599.5].map(entry), NOW, true);

    expect(state).toEqual({ name: 'deploy', remaining: 0, resetSeconds: 1, exceeded: true });
  });

  it("keeps the request's own entry so that it can be given back", () => {
    expect(slidingWindowState('deploy', [entry(0)], NOW, false, entry(0)).taken).toBe(entry(0));
  });

  it('writes the IETF headers from the states', () => {
    const states = [slidingWindowState('general', [entry(0), entry(12)], NOW, false), slidingWindowState('deploy', [entry(0)], NOW, false)];

    expect(rateLimitHeaders(states)).toEqual({
      'RateLimit-Policy': '"general";q=60;w=60, "deploy";q=5;w=3600',
      RateLimit: '"general";r=58;t=48, "deploy";r=4;t=3600',
    });
  });
});
