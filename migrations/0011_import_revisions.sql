-- I3: a transcript brought in from another tool (PAGE XML or ALTO, uploaded beside its image)
-- becomes revision 1 with source 'import'; its provenance (format, schema namespace, the
-- software or creator the file names, the uploaded file's SHA-256) is kept with the revision.
ALTER TABLE page_revisions DROP CONSTRAINT page_revisions_source_check;
ALTER TABLE page_revisions ADD CONSTRAINT page_revisions_source_check
  CHECK (source IN ('initial', 'engine', 'human', 'import'));
ALTER TABLE page_revisions ADD COLUMN provenance jsonb;
ALTER TABLE page_revisions ADD CONSTRAINT page_revisions_import_provenance
  CHECK (source <> 'import' OR provenance IS NOT NULL);
