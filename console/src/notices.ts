/**
 * The notices a page shows on arrival, named in its address by code (`#/sign-in?notice=signed-out`). Only the
 * console's own texts are shown: text in the address is never, since anyone can craft a link that puts any text
 * there, and it would read as the service's own word.
 */
const NOTICES = {
  'signed-out': 'You are signed out.',
  'sign-in-required': 'Please sign in to continue.',
  'session-ended': 'Your session has ended. Please sign in again.',
  'password-changed': 'Your password is changed. Please sign in with it.',
  'funds-added': 'Payment confirmed: the funds are in your balance.',
} as const;

export type NoticeCode = keyof typeof NOTICES;

const isNoticeCode = (code: string): code is NoticeCode => Object.hasOwn(NOTICES, code);

/** The text of the notice an address names, if it names one of ours; anything else shows nothing. */
export function noticeText(params: URLSearchParams): string | undefined {
  const code = params.get('notice');
  return code !== null && isNoticeCode(code) ? NOTICES[code] : undefined;
}
