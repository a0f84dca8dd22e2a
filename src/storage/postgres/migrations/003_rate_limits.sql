-- 003: rate-limit counters shared by all nodes (rate-limiter-flexible's RateLimiterPostgres,
-- wired in rate-limits.ts). The layout is the library's own; it is created here rather than by
-- the library so that nodes starting together do not race on CREATE TABLE.
CREATE TABLE chatroom_rate_limits (
  key varchar(255) PRIMARY KEY,
  points integer NOT NULL DEFAULT 0,
  -- Epoch milliseconds (the nodes' clocks: keep them in sync with NTP).
  expire bigint
);
-- The library's hourly clean-up deletes by expiry.
CREATE INDEX chatroom_rate_limits_expire ON chatroom_rate_limits (expire);
