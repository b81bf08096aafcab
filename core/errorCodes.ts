/**
 * Every stable error code Quire answers with, declared once (SPEC §7): the kind of refusal it
 * is, which web/lib/errors.ts turns into the HTTP status, and the sentence the console shows a
 * person. A code raised anywhere is a key of ERROR_CODES, so a new code is added here first or
 * `tsc` refuses the site. Codes are public: renaming one breaks integrators.
 *
 * `detail: true` marks a code whose error message names what a person must change (a field,
 * a limit, a reason): the console shows that message instead of the sentence.
 */
export type ErrorKind =
  /** The request cannot be read at all (a bad body, token or field name). */
  | 'malformed'
  /** Readable but refused: a value out of bounds, a rule of the domain. */
  | 'invalid'
  /** More bytes, files or fields than allowed. */
  | 'too_large'
  /** A media or content type Quire does not take. */
  | 'unsupported'
  | 'not_found'
  /** R1: the principal is in the workspace, but its role or key scope does not allow the act. */
  | 'forbidden'
  /** R2: not signed in, or the credentials are wrong. */
  | 'unauthenticated'
  /** R2: too many attempts; try again later. */
  | 'rate_limited'
  /** The thing exists but is in a state that forbids the act. */
  | 'conflict'
  /** An edit must name the revision it was made from (If-Match). */
  | 'precondition_required'
  /** The revision an edit names is no longer kept. */
  | 'precondition_failed'
  /** The storage quota would be exceeded. */
  | 'quota'
  /** A dependency did not answer or a reservation lapsed: the same request may succeed later. */
  | 'unavailable'
  /** Quire failed; the answer says nothing more. */
  | 'internal';

export interface ErrorCodeEntry {
  kind: ErrorKind;
  sentence: string;
  detail?: true;
}

export const ERROR_CODES = {
  // Requests that cannot be read (R6)
  invalid_request: { kind: 'malformed', sentence: 'The request could not be read.', detail: true },
  invalid_query: { kind: 'malformed', sentence: 'The request could not be read.', detail: true },
  invalid_path: { kind: 'malformed', sentence: 'That address is not valid.' },
  malformed_json: { kind: 'malformed', sentence: 'The request could not be read.' },
  /** X5: JSON nested deeper than MAX_JSON_DEPTH (core/jsonDepth.ts). */
  json_too_deep: { kind: 'malformed', sentence: 'The request could not be read.', detail: true },
  malformed_multipart: { kind: 'malformed', sentence: 'The upload could not be read.' },
  invalid_text: {
    kind: 'malformed',
    sentence: 'The text holds characters Quire cannot keep.',
    detail: true,
  },
  invalid_page_token: {
    kind: 'malformed',
    sentence: 'That list position is no longer valid; start from the first page.',
  },
  invalid_if_match: { kind: 'malformed', sentence: 'The edit names no revision it was made from.' },
  invalid_last_event_id: {
    kind: 'malformed',
    sentence: 'The stream could not be resumed; reload the page.',
  },
  last_event_id_ahead: {
    kind: 'malformed',
    sentence: 'The stream could not be resumed; reload the page.',
  },
  unexpected_field: {
    kind: 'malformed',
    sentence: 'The upload has a field Quire does not take.',
    detail: true,
  },
  no_files: { kind: 'malformed', sentence: 'Choose at least one file to upload.' },
  payload_too_large: { kind: 'too_large', sentence: 'The request is too large.', detail: true },
  unsupported_media_type: {
    kind: 'unsupported',
    sentence: 'Quire does not take files of that type.',
    detail: true,
  },
  precondition_required: {
    kind: 'precondition_required',
    sentence: 'The edit names no revision it was made from; reload the page.',
  },
  stale_revision: {
    kind: 'precondition_failed',
    sentence: 'The page changed since you read it; reload it.',
  },
  internal: { kind: 'internal', sentence: 'That could not be done; try again.' },
  temporal_unavailable: {
    kind: 'unavailable',
    sentence: 'The workflow service did not answer; try again.',
  },

  // People, sessions and keys (R1-R3, M1)
  unauthenticated: { kind: 'unauthenticated', sentence: 'Sign in first.' },
  invalid_credentials: {
    kind: 'unauthenticated',
    sentence: 'That email or password is not valid.',
  },
  oidc_claims: {
    kind: 'unauthenticated',
    sentence: 'The identity provider did not give an email.',
  },
  /** X2: `email_verified` was not exactly true (missing, false, or a string). */
  oidc_email_unverified: {
    kind: 'unauthenticated',
    sentence:
      'The identity provider has not verified your email, so single sign-on cannot use it. Verify it there, or sign in with your password.',
  },
  /** X2: an account has the email; the person did not prove they hold it. */
  oidc_link_unproven: {
    kind: 'unauthenticated',
    sentence:
      'An account with your email exists already. Sign in to it with its password first, then choose single sign-on again to link the two.',
  },
  /** X2: operators are never linked by email. */
  oidc_operator_link: {
    kind: 'forbidden',
    sentence:
      'Single sign-on does not link an operator to an existing account. Ask another operator.',
  },
  /** X2: the account of that email is linked to another identity at the provider. */
  oidc_link_taken: {
    kind: 'conflict',
    sentence: 'The account with your email is linked to another identity at the provider.',
  },
  too_many_attempts: {
    kind: 'rate_limited',
    sentence: 'Too many failed sign-ins. Wait a few minutes and try again.',
  },
  forbidden: { kind: 'forbidden', sentence: 'Your role does not allow that.', detail: true },
  origin_mismatch: {
    kind: 'forbidden',
    sentence: 'That change did not come from this console; reload the page.',
  },
  cannot_disable_self: {
    kind: 'conflict',
    sentence: 'An operator cannot disable their own account; another operator can.',
  },
  invalid_email: { kind: 'invalid', sentence: 'That is not an email address.' },
  invalid_role: { kind: 'invalid', sentence: 'That is not a role.' },
  invalid_name: { kind: 'invalid', sentence: 'A name has 1 to 200 characters.', detail: true },
  invalid_scope: { kind: 'invalid', sentence: 'A key is scoped read or write.' },
  invalid_search: { kind: 'invalid', sentence: 'That search is too long.', detail: true },
  weak_password: { kind: 'invalid', sentence: 'That password is too weak.', detail: true },
  account_exists: { kind: 'conflict', sentence: 'An account with that email exists already.' },
  account_not_found: { kind: 'not_found', sentence: 'That account does not exist.' },
  member_not_found: {
    kind: 'not_found',
    sentence: 'That person is not a member of this workspace.',
  },
  last_owner: {
    kind: 'conflict',
    sentence: 'A workspace keeps at least one owner; make another first.',
  },
  api_key_not_found: { kind: 'not_found', sentence: 'That key does not exist.' },
  operator_key_not_found: { kind: 'not_found', sentence: 'That operator key does not exist.' },
  invitation_not_found: {
    kind: 'not_found',
    sentence: 'This invitation link is not valid: used, revoked or expired.',
  },
  /** R9: a password reset link used, expired, or never made. */
  reset_closed: {
    kind: 'not_found',
    sentence: 'This password reset link is not valid: used or expired. Ask for a new one.',
  },
  invitation_accepted: { kind: 'conflict', sentence: 'This invitation was accepted already.' },
  /** R9, X2: an invitation goes only by email to its address; no server is configured. */
  mail_not_configured: {
    kind: 'conflict',
    sentence:
      'This installation sends no mail (QUIRE_SMTP_URL is unset), and invitations go by email.',
  },
  mail_failed: {
    kind: 'unavailable',
    sentence: 'The mail server did not take the message; nothing was sent. Try again later.',
  },
  /** R9: changing one's own password proves the current one first. */
  wrong_password: { kind: 'invalid', sentence: 'The current password is wrong.' },
  invitation_revoked: {
    kind: 'conflict',
    sentence: 'This invitation was revoked by an owner of the workspace; ask them for a new one.',
  },

  // Workspaces and operator controls (M3, M4)
  workspace_not_found: { kind: 'not_found', sentence: 'That workspace does not exist.' },
  not_found: { kind: 'not_found', sentence: 'That does not exist.' },
  invalid_dailyBudgetMicros: {
    kind: 'invalid',
    sentence: 'A daily budget is a whole number; leave blank for none.',
    detail: true,
  },
  invalid_quotaBytes: {
    kind: 'invalid',
    sentence: 'A quota is a whole number of bytes; leave blank for none.',
    detail: true,
  },
  invalid_activeJobCap: {
    kind: 'invalid',
    sentence: 'A cap is a whole number, at least 1; leave blank for none.',
    detail: true,
  },
  provider_not_found: {
    kind: 'not_found',
    sentence:
      'There is no provider of yours by that name; shared providers are resumed by an operator.',
  },
  unknown_provider: {
    kind: 'invalid',
    sentence: 'There is no provider by that name.',
    detail: true,
  },
  provider_not_enabled: {
    kind: 'invalid',
    sentence: 'That provider is not enabled on this installation.',
    detail: true,
  },
  provider_kind_mismatch: {
    kind: 'invalid',
    sentence: 'That provider does not read pages of this kind.',
    detail: true,
  },
  invalid_csv: {
    kind: 'invalid',
    sentence: 'The metadata sheet has a bad row; nothing was stored.',
    detail: true,
  },
  model_not_installed: {
    kind: 'invalid',
    sentence:
      'No model for that language is installed for this engine; choose one the console lists.',
    detail: true,
  },
  simulated_not_enabled: {
    kind: 'invalid',
    sentence: 'The simulated engine is not enabled on this installation.',
  },
  invalid_simulated_options: {
    kind: 'invalid',
    sentence: 'The simulated engine cannot run with those options.',
    detail: true,
  },
  invalid_options: { kind: 'invalid', sentence: 'Those job options are not valid.', detail: true },
  /** X5: a job option Quire does not know is refused by name, never stored in the snapshot. */
  unknown_option: { kind: 'invalid', sentence: 'That job option is not known.', detail: true },
  invalid_job_request: {
    kind: 'invalid',
    sentence: 'That job cannot be started as asked.',
    detail: true,
  },
  quota_exceeded: {
    kind: 'quota',
    sentence: 'The storage quota would be exceeded; nothing was stored.',
    detail: true,
  },
  too_many_streams: {
    kind: 'rate_limited',
    sentence: 'Too many live views are open; close some and reload.',
    detail: true,
  },
  too_many_workspace_streams: {
    kind: 'rate_limited',
    sentence: 'This workspace has too many live views open; close some and reload.',
  },

  // Jobs and batches (J4, J5)
  job_not_found: { kind: 'not_found', sentence: 'That job does not exist.' },
  job_not_active: { kind: 'conflict', sentence: 'The job has already finished.' },
  batch_not_found: { kind: 'not_found', sentence: 'That batch does not exist.' },

  // Uploads (U1-U4, I5)
  invalid_content_type: {
    kind: 'unsupported',
    sentence: 'An upload is sent as multipart/form-data.',
  },
  request_too_large: { kind: 'too_large', sentence: 'The upload is too large.', detail: true },
  field_too_large: {
    kind: 'too_large',
    sentence: 'A field of the upload is too large.',
    detail: true,
  },
  metadata_too_large: { kind: 'too_large', sentence: 'The metadata is too large.', detail: true },
  too_many_files: { kind: 'too_large', sentence: 'The upload has too many files.', detail: true },
  too_many_parts: { kind: 'too_large', sentence: 'The upload has too many parts.' },
  too_many_fields: { kind: 'too_large', sentence: 'The upload has too many fields.' },
  invalid_field: { kind: 'invalid', sentence: 'A field of the upload is not valid.', detail: true },
  invalid_metadata: { kind: 'invalid', sentence: 'The metadata must be a JSON object.' },
  empty_file: { kind: 'invalid', sentence: 'That file is empty.' },
  file_too_large: { kind: 'too_large', sentence: 'That file is too large.', detail: true },
  image_too_large: { kind: 'invalid', sentence: 'That image has too many pixels.', detail: true },
  audio_too_long: { kind: 'invalid', sentence: 'That recording is too long.', detail: true },
  malformed_media: {
    kind: 'invalid',
    sentence: 'That file could not be read as the image or recording it claims to be.',
    detail: true,
  },
  too_many_pages: {
    kind: 'too_large',
    sentence: 'That document has too many pages.',
    detail: true,
  },
  document_encrypted: { kind: 'unsupported', sentence: 'That document needs a password to open.' },
  blob_store_unavailable: {
    kind: 'unavailable',
    sentence: 'The file store is unavailable; try again.',
  },
  reservation_expired: {
    kind: 'unavailable',
    sentence: 'The upload took too long; nothing was stored. Try again.',
  },
  derivative_not_attached: {
    kind: 'conflict',
    sentence: 'The page no longer takes this derivative.',
  },

  // Transcripts uploaded beside their images (I3, I5, I6)
  transcript_without_image: {
    kind: 'malformed',
    sentence: 'A transcript needs the image it belongs to.',
    detail: true,
  },
  transcript_for_document: {
    kind: 'invalid',
    sentence: 'A transcript cannot be given for a PDF or TIFF document.',
    detail: true,
  },
  transcript_for_audio: {
    kind: 'invalid',
    sentence: 'A transcript file belongs to an image, not a recording.',
    detail: true,
  },
  duplicate_transcript: {
    kind: 'malformed',
    sentence: 'An image has more than one transcript.',
    detail: true,
  },
  transcript_malformed: {
    kind: 'malformed',
    sentence: 'That transcript could not be read.',
    detail: true,
  },
  transcript_unsupported: {
    kind: 'unsupported',
    sentence: 'Quire does not read that transcript format.',
    detail: true,
  },
  transcript_too_large: {
    kind: 'too_large',
    sentence: 'That transcript is too large.',
    detail: true,
  },
  transcript_invalid: { kind: 'invalid', sentence: 'That transcript is not valid.', detail: true },
  transcript_size_mismatch: {
    kind: 'invalid',
    sentence: 'The transcript is for an image of another size.',
    detail: true,
  },
  transcript_too_deep: { kind: 'invalid', sentence: 'That transcript is nested too deeply.' },
  transcript_reserved_name: {
    kind: 'invalid',
    sentence: 'That transcript uses a reserved name.',
    detail: true,
  },
  transcript_invalid_text: {
    kind: 'invalid',
    sentence: 'That transcript holds characters Quire cannot keep.',
    detail: true,
  },
  transcript_line_too_long: {
    kind: 'invalid',
    sentence: 'That transcript has a line too long to keep.',
    detail: true,
  },
  transcript_invalid_language: {
    kind: 'invalid',
    sentence: 'That transcript names a language that is not a tag such as en or de-DE.',
  },
  transcript_invalid_namespace: {
    kind: 'invalid',
    sentence: 'That transcript names a namespace Quire does not read.',
  },

  // Pages, revisions, lines (E3, V1-V6)
  page_not_found: { kind: 'not_found', sentence: 'That page does not exist.' },
  revision_not_found: { kind: 'not_found', sentence: 'That revision does not exist.' },
  revision_conflict: { kind: 'conflict', sentence: 'The page changed meanwhile; reload it.' },
  revision_mismatch: {
    kind: 'conflict',
    sentence: 'The page changed since you read it; review it before publishing.',
  },
  line_conflict: {
    kind: 'conflict',
    sentence: 'Lines you changed were changed by someone else meanwhile.',
  },
  unknown_line: {
    kind: 'invalid',
    sentence: 'That line is not on the page any more; reload it.',
    detail: true,
  },
  unknown_speaker: {
    kind: 'invalid',
    sentence: 'No line of the page has that speaker.',
    detail: true,
  },
  duplicate_segment_index: {
    kind: 'invalid',
    sentence: 'A line appears twice in the edit.',
    detail: true,
  },
  segment_kind_mismatch: {
    kind: 'invalid',
    sentence: 'A line targets the wrong kind of page.',
    detail: true,
  },
  invalid_segment_span: {
    kind: 'invalid',
    sentence: 'A line ends before it starts.',
    detail: true,
  },
  page_text_too_large: {
    kind: 'too_large',
    sentence: 'The page holds more text than Quire keeps for one page.',
    detail: true,
  },
  diff_too_large: {
    kind: 'too_large',
    sentence:
      'The revisions differ over too many lines to compare here; export both to compare them elsewhere.',
  },
  unsupported_format: {
    kind: 'invalid',
    sentence: 'That export format does not fit this page.',
    detail: true,
  },
  image_undecodable: { kind: 'invalid', sentence: "The page's image cannot be decoded." },

  // The archive (F1-F4); the `invalid_*` form codes come back to the console as `?error=`
  invalid_collection: {
    kind: 'invalid',
    sentence:
      'A collection needs a title (at most 500 characters), and every metadata row a label and a value.',
  },
  invalid_item: {
    kind: 'invalid',
    sentence:
      'Every metadata row needs a label and a value; a language is a tag such as en or de-DE.',
  },
  invalid_order: {
    kind: 'invalid',
    sentence: 'That page order could not be read; reload the page and try again.',
  },
  invalid_target: { kind: 'invalid', sentence: 'Name another item to move the page to.' },
  invalid_item_id: { kind: 'invalid', sentence: 'That is not an item id.', detail: true },
  collection_not_found: { kind: 'not_found', sentence: 'That collection no longer exists.' },
  parent_not_found: { kind: 'invalid', sentence: 'That collection no longer exists.' },
  collection_cycle: {
    kind: 'conflict',
    sentence: 'A collection cannot move under itself or one of its own sub-collections.',
  },
  collection_not_empty: {
    kind: 'conflict',
    sentence:
      'Only an empty collection can be deleted: move or delete its items and sub-collections first.',
  },
  item_not_found: { kind: 'not_found', sentence: 'That item does not exist.' },
  item_deleted: { kind: 'conflict', sentence: 'That item was deleted; choose another.' },
  item_has_active_jobs: {
    kind: 'conflict',
    sentence: 'That item has jobs still running; wait for them or cancel them first.',
  },
  duplicate_pages: { kind: 'invalid', sentence: 'A page is listed more than once.' },
  pages_changed: {
    kind: 'conflict',
    sentence: 'The pages changed meanwhile; here they are as they stand now.',
  },
  pages_missing: { kind: 'invalid', sentence: 'Every page of the item must stay in its order.' },

  // IIIF Image API requests (I2)
  invalid_region: { kind: 'malformed', sentence: 'That image region is not valid.', detail: true },
  region_outside_image: { kind: 'malformed', sentence: 'That region lies outside the image.' },
  invalid_size: { kind: 'malformed', sentence: 'That image size is not valid.', detail: true },
  size_too_large: { kind: 'malformed', sentence: 'That image would be too large.', detail: true },
  upscale_not_requested: {
    kind: 'malformed',
    sentence: 'That size is larger than the image; ask for an upscale with ^.',
    detail: true,
  },
  invalid_rotation: { kind: 'malformed', sentence: 'That rotation is not valid.', detail: true },
  rotation_unsupported: {
    kind: 'malformed',
    sentence: 'Quire turns images by right angles only.',
    detail: true,
  },
  invalid_quality: {
    kind: 'malformed',
    sentence: 'That image quality is not offered.',
    detail: true,
  },
  format_unsupported: { kind: 'malformed', sentence: 'Images are offered as jpg, png or webp.' },

  // Webhooks (W1, W2)
  invalid_url: {
    kind: 'invalid',
    sentence: 'That is not a URL a webhook can be sent to.',
    detail: true,
  },
  invalid_secret: { kind: 'invalid', sentence: 'That secret is not valid.', detail: true },
  invalid_event_types: {
    kind: 'invalid',
    sentence: 'Those are not event types Quire sends.',
    detail: true,
  },
  too_many_subscriptions: {
    kind: 'invalid',
    sentence: 'This workspace has as many webhooks as it may have.',
    detail: true,
  },
  forbidden_target: {
    kind: 'invalid',
    sentence: 'That URL points where a webhook may not go.',
    detail: true,
  },
  // F8: importing an item from a IIIF manifest URL.
  iiif_invalid_url: {
    kind: 'invalid',
    sentence: 'The manifest URL must be an http or https URL.',
    detail: true,
  },
  iiif_forbidden_target: {
    kind: 'invalid',
    sentence: 'That URL points where Quire may not fetch from.',
    detail: true,
  },
  iiif_fetch_failed: {
    kind: 'invalid',
    sentence: 'The IIIF server did not answer as expected.',
    detail: true,
  },
  iiif_too_large: {
    kind: 'too_large',
    sentence: 'A response of the IIIF server is too large.',
    detail: true,
  },
  iiif_not_json: { kind: 'unsupported', sentence: 'That URL does not answer JSON.', detail: true },
  iiif_not_manifest: {
    kind: 'unsupported',
    sentence: 'That is not a IIIF Presentation 2 or 3 manifest.',
    detail: true,
  },
  iiif_too_many_canvases: {
    kind: 'too_large',
    sentence: 'That manifest has too many canvases.',
    detail: true,
  },
  iiif_no_image: {
    kind: 'invalid',
    sentence: 'A canvas of that manifest has no image Quire can fetch.',
    detail: true,
  },
  iiif_transcription_invalid: {
    kind: 'invalid',
    sentence: 'A transcription the manifest names could not be read.',
    detail: true,
  },
  webhook_url_exists: {
    kind: 'conflict',
    sentence: 'This workspace already has a webhook for that URL.',
  },
  webhook_not_found: { kind: 'not_found', sentence: 'That webhook does not exist.', detail: true },
  delivery_not_found: {
    kind: 'not_found',
    sentence: 'That delivery does not exist.',
    detail: true,
  },
  delivery_not_replayable: {
    kind: 'conflict',
    sentence: 'Only a failed or dead delivery can be replayed.',
    detail: true,
  },
  subscription_disabled: { kind: 'conflict', sentence: 'That webhook is disabled.', detail: true },
} as const satisfies Record<string, ErrorCodeEntry>;

export type ErrorCode = keyof typeof ERROR_CODES;

/** The codes of one kind, for the classes that stand for a kind (NotFoundError, ConflictError). */
export type ErrorCodeOfKind<K extends ErrorKind> = {
  [C in ErrorCode]: (typeof ERROR_CODES)[C]['kind'] extends K ? C : never;
}[ErrorCode];

export function isErrorCode(value: string): value is ErrorCode {
  return Object.hasOwn(ERROR_CODES, value);
}

export function kindOfCode(code: ErrorCode): ErrorKind {
  return ERROR_CODES[code].kind;
}
