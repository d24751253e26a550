import { reconcile } from '../../shared/domain/reconciler';

export const handler = async () => reconcile();
