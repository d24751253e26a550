// eslint-disable-next-line no-restricted-imports -- the one module that takes zod itself
import { config } from 'zod';

/**
 * zod as the service uses it, set up before any schema is made: every module takes zod from here. Without zod's code
 * generation (`jitless`): it compiles a parser for each object schema at its first parse, about 0.7 ms each, which a
 * function pays for every schema its first request parses at each cold start; a warm parse is a few microseconds
 * slower. It also leaves `new Function` out of the service.
 */
config({ jitless: true });

// eslint-disable-next-line no-restricted-imports -- the one module that takes zod itself
export * from 'zod';
