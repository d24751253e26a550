import { runMeter } from '../../shared/domain/billing';

export const handler = async () => runMeter();
