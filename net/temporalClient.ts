import { Connection } from '@temporalio/client';
import type { QuireConfig } from '../core/config';
import type { Logger } from '../core/logger';
import { temporalConnectionOptions } from '../core/temporalConnection';
import { startTemporalToken, type TemporalToken } from './temporalToken';

/**
 * The typed client's connection as every Quire process opens it (D2, R4): the settings of
 * core/temporalConnection.ts, and, where the frontend checks callers, a token of Quire's own
 * client sent on every call and replaced before it expires. Closing the connection stops the
 * refresh of a token it started.
 */
export async function connectTemporal(
  config: QuireConfig,
  options: { token?: TemporalToken; logger?: Logger; connectTimeout?: number } = {},
): Promise<Connection> {
  const ownToken = options.token ? undefined : await startTemporalToken(config, options);
  const token = options.token ?? ownToken;
  try {
    const connection = await Connection.connect({
      ...temporalConnectionOptions(config),
      ...(token ? { apiKey: () => token.current() } : {}),
      // D7: a Temporal server that does not answer fails the connect within the bound.
      connectTimeout: options.connectTimeout ?? config.QUIRE_TEMPORAL_CONNECT_TIMEOUT_MS,
    });
    if (ownToken) {
      const close = connection.close.bind(connection);
      connection.close = async () => {
        ownToken.close();
        await close();
      };
    }
    return connection;
  } catch (error) {
    ownToken?.close();
    throw error;
  }
}
