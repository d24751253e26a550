/** Static credentials for the local stand-ins; they accept any signature, so no real secret is involved. */
export const localCredentials = { accessKeyId: 'local', secretAccessKey: 'local' } as const;
