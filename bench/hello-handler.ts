/** The reference point for cold starts: the smallest handler that answers. */
export const handler = async () => ({ statusCode: 200, body: 'hello' });
