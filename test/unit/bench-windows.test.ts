import { busiestWindow } from '../../bench/windows';

describe("the bench's sliding-window check", () => {
  it('finds the busiest interval of the window length, an entry exactly a window later falling outside it', () => {
    expect(busiestWindow([], 60_000)).toEqual({ count: 0, fromMs: 0 });
    expect(busiestWindow([1_000, 61_000], 60_000)).toEqual({ count: 1, fromMs: 1_000 });
    expect(busiestWindow([1_000, 60_999], 60_000)).toEqual({ count: 2, fromMs: 1_000 });
    expect(busiestWindow([90_000, 0, 30_000, 59_000, 61_000, 62_000], 60_000)).toEqual({ count: 4, fromMs: 30_000 });
  });
});
