/**
 * The `source` of every event on the bus; rules match on it. Apart from the transports, so that the stack's rule
 * reads it without loading the AWS clients and Powertools.
 */
export const EVENT_SOURCE = 'vps.service';
