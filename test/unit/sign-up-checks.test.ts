import { signUpRoute } from '../../shared/contracts/console';
import { statusOf } from '../../shared/http/failure-status';
import { parseOrBadRequest } from '../../shared/schemas/validation';

const PASSWORD = 'correct horse battery';

describe('the checks of a sign-up', () => {
  it.each([
    [{ email: 'not-an-address', password: PASSWORD }, 'email must be an e-mail address'],
    [{ email: 'a@example.com', password: 'short' }, 'password must be at least 10 characters'],
    [{ email: 'a@example.com' }, 'password is required'],
    [{ password: PASSWORD }, 'email is required'],
    [{ email: 'a@example.com', password: PASSWORD, admin: true }, 'Unknown field: admin'],
  ])('refuses %j with 400 "%s"', (body, text) => {
    const refusal = (() => {
      try {
        parseOrBadRequest(signUpRoute.body, body);
        return undefined;
      } catch (error) {
        return [statusOf(error), (error as Error).message];
      }
    })();

    expect(refusal).toEqual([400, text]);
  });

  it('takes an address and a password of 10 characters or more', () => {
    expect(parseOrBadRequest(signUpRoute.body, { email: 'a@example.com', password: PASSWORD })).toEqual({
      email: 'a@example.com',
      password: PASSWORD,
    });
  });
});
