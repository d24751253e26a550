/** The floor: a handler that does no work, served by the same gateway. */
export const handler = async () => ({ statusCode: 200, headers: { 'Content-Type': 'application/json' }, body: '{"ok":true}' });
