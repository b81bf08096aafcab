-- M3: a pause stops exactly what failed. A provider whose credentials belong to each workspace
-- (declared in core/providerCatalogue.ts) pauses per workspace: its row names the workspace.
-- A provider on the installation's shared credentials keeps one row with no workspace, which
-- holds every workspace and which only an operator resumes.
ALTER TABLE provider_state ADD COLUMN workspace_id bigint REFERENCES workspaces(id) ON DELETE CASCADE;
ALTER TABLE provider_state DROP CONSTRAINT provider_state_pkey;
CREATE UNIQUE INDEX provider_state_scope ON provider_state (provider, workspace_id) NULLS NOT DISTINCT;

-- Finding the active jobs a provider holds (to wake them, and to tell their workspaces of a
-- pause): by main provider, and by polish provider.
CREATE INDEX transcription_jobs_active_provider ON transcription_jobs (provider)
  WHERE status IN ('pending', 'running');
CREATE INDEX transcription_jobs_active_polish ON transcription_jobs ((snapshot->'options'->>'polishProvider'))
  WHERE status IN ('pending', 'running') AND snapshot->'options' ? 'polishProvider';
