import { noticeText, type NoticeCode } from '../../console/src/notices';

describe('the console’s notices', () => {
  it.each<[NoticeCode, string]>([
    ['signed-out', 'You are signed out.'],
    ['sign-in-required', 'Please sign in to continue.'],
    ['session-ended', 'Your session has ended. Please sign in again.'],
    ['password-changed', 'Your password is changed. Please sign in with it.'],
  ])('shows its own text for the code %s', (code, text) => {
    expect(noticeText(new URLSearchParams({ notice: code }))).toBe(text);
  });

  it.each([
    ['text in the address', 'message=Your%20account%20is%20locked.%20Call%20%2B1%20555%200100.'],
    ['text given as the code', 'notice=Your%20account%20is%20locked.'],
    ['an unknown code', 'notice=account-locked'],
    ['a name every object has', 'notice=constructor'],
    ['a prototype key', 'notice=__proto__'],
    ['nothing', ''],
  ])('shows nothing for %s', (_what, query) => {
    expect(noticeText(new URLSearchParams(query))).toBeUndefined();
  });
});
