import 'server-only';
import type { RecordingRetention } from '@quire/core/media';
import type { Principal } from '@quire/core/roles';
import { setRecordingRetention } from '@quire/db/workspaces';
import { pool } from '@quire/web/lib/server';
import { actorOf, requireAction } from './access';

/** V6: the workspace's rule for its recordings, an owner's setting (R1), audited with who. */
export function updateRecordingRetention(principal: Principal, retention: RecordingRetention) {
  requireAction(principal, 'workspace.settings');
  return setRecordingRetention(pool(), actorOf(principal), principal.workspaceId, retention);
}
