#!/usr/bin/env node
// The `vps` command. It runs the TypeScript sources through tsx, which the project installs, so there is no build step.
import { register } from 'tsx/esm/api';

register();
await import('../main.ts');
