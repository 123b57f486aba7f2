-- Rate limit counters live for a minute and need no crash safety: an unlogged table writes no
-- WAL, so counting a request does not wait for a disk flush on commit.
ALTER TABLE "rate_limits" SET UNLOGGED;
