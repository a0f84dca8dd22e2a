-- 002: look-alike names across nodes (SPEC §3: a name whose confusable skeleton equals an
-- existing name's is name_taken). `participants.name_key` only holds the NFC, case-folded name;
-- the skeletons (UTS #39) are computed by the server, so they get a table of their own with one
-- row per key, and its primary key makes a second node's look-alike registration fail inside the
-- same statement that inserts the participant. Rows of participants stored before this version
-- are added by the server at start (PgStore.open), computed from their names.
CREATE TABLE participant_look_alikes (
  key text PRIMARY KEY,
  participant_id text NOT NULL REFERENCES participants (id) ON DELETE CASCADE
);
CREATE INDEX participant_look_alikes_participant ON participant_look_alikes (participant_id);
