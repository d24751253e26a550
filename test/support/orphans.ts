import type { Deps } from '../../shared/domain/deps';
import { serviceTag } from '../../shared/domain/instances';
import { upstream } from '../../shared/domain/upstream';

/** A server carrying the service's tag that no instance records: what a crash between create and record leaves. */
export const orphanServer = async (deps: Deps, name: string) =>
  (await upstream(deps)).createServer({ name, tags: [serviceTag(deps)], size: 's-1vcpu-2gb', image: 'ubuntu-24-04-x64', userData: '' });
