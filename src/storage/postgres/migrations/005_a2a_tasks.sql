-- 005: the tasks of the rooms' A2A interface (SPEC §12, docs/a2a.md), shared by the nodes so that
-- GetTask and CancelTask answer on any node. One row per task: its owner (the participant who
-- sent the message) and room, which alone may read it; the node that took the message and
-- follows its round; `final` once the task reached a terminal state (completed, failed,
-- canceled, rejected), after which the row never changes; the task itself as its A2A JSON text
-- (`text`, not jsonb: a task is stored and read whole, never queried inside).
-- Bounded like the in-memory store: past the bound the least recently updated rows are deleted
-- (src/storage/postgres/a2a-tasks.ts).
CREATE TABLE chatroom_a2a_tasks (
  task_id text PRIMARY KEY,
  owner_id text NOT NULL,
  room_id text NOT NULL,
  node_id text NOT NULL,
  final boolean NOT NULL DEFAULT false,
  task text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX chatroom_a2a_tasks_owner ON chatroom_a2a_tasks (owner_id, room_id, updated_at DESC);
CREATE INDEX chatroom_a2a_tasks_updated ON chatroom_a2a_tasks (updated_at DESC);
-- The tasks still followed, by node: a node whose presence expired leaves these to be finished.
CREATE INDEX chatroom_a2a_tasks_open ON chatroom_a2a_tasks (node_id) WHERE NOT final;
