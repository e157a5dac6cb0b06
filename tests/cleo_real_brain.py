# ruff: noqa: E501
"""A small brain CLEO v2026.8.9 wrote, and what its `memory find` and `fetch` logged, restated as data.

Recorded on 2026-12-02 by running CLEO built from its source (packages/core, engine functions
memoryObserve, memoryLearningStore, memoryPatternStore, memoryDecisionStore, memoryFind, memoryFetch, the
ones `cleo memory observe/store/decision-store/find/fetch` dispatch to). Before the finds, one observation
was given quality 0.2 and a learning 0.25 (below CLEO's 0.3) and one observation was soft-evicted
(invalid_at). The rows keep only the columns CLEO's find reads, in CLEO's row order; `LOGGED` is
brain_retrieval_log in id order: (query, source, ids CLEO returned). Finds that returned nothing are not
logged by CLEO ("flaky test", "a", "x y z", "café naïve").
"""

from __future__ import annotations

# fmt: off
OBSERVATIONS_COLUMNS = ('id', 'type', 'title', 'narrative', 'quality_score', 'invalid_at', 'created_at')
OBSERVATIONS = [
    ('O-mx6rho3x-0', 'discovery', 'Stripe webhook signature verification fails when the raw body is parsed as JSON first', 'Stripe webhook signature verification fails when the raw body is parsed as JSON first', 0.65, None, '2026-12-02 23:33:18'),
    ('O-mx6rii96-0', 'discovery', 'The stripe webhook handler must be idempotent because Stripe retries deliveries', 'The stripe webhook handler must be idempotent because Stripe retries deliveries', 0.65, '2026-12-02 23:40:00', '2026-12-02 23:33:57'),
    ('O-mx6rjrc4-0', 'discovery', 'Webhook retries from Stripe back off exponentially for up to three days', 'Webhook retries from Stripe back off exponentially for up to three days', 0.65, None, '2026-12-02 23:34:55'),
    ('O-mx6rl1a6-0', 'discovery', 'Stripe invoices are finalized nightly by the billing cron job', 'Stripe invoices are finalized nightly by the billing cron job', 0.65, None, '2026-12-02 23:35:55'),
    ('O-mx6rlr65-0', 'discovery', 'The billing service reads the Stripe API key from the vault at startup', 'The billing service reads the Stripe API key from the vault at startup', 0.45499999999999996, None, '2026-12-02 23:36:28'),
    ('O-mx6rlrbd-1', 'discovery', 'Postgres connection pool is capped at 20 connections in staging', 'Postgres connection pool is capped at 20 connections in staging', 0.45499999999999996, None, '2026-12-02 23:36:29'),
    ('O-mx6rlrfq-2', 'discovery', 'Staging deploys go through the release branch and need a green CI run', 'Staging deploys go through the release branch and need a green CI run', 0.45499999999999996, None, '2026-12-02 23:36:29'),
    ('O-mx6rlrkl-3', 'discovery', 'The staging database is reset every night at 02:00 UTC', 'The staging database is reset every night at 02:00 UTC', 0.45499999999999996, None, '2026-12-02 23:36:29'),
    ('O-mx6rlrpc-4', 'discovery', 'Production deploys require two approvals in the deploy pipeline', 'Production deploys require two approvals in the deploy pipeline', 0.45499999999999996, None, '2026-12-02 23:36:29'),
    ('O-mx6rlrtr-5', 'discovery', 'Redis is used as the session store; sessions expire after 24 hours', 'Redis is used as the session store; sessions expire after 24 hours', 0.45499999999999996, None, '2026-12-02 23:36:29'),
    ('O-mx6rlry5-6', 'discovery', 'The cache warmup job preloads product pages after each deploy', 'The cache warmup job preloads product pages after each deploy', 0.45499999999999996, None, '2026-12-02 23:36:29'),
    ('O-mx6rls2h-7', 'discovery', 'Flaky test in test_checkout_flow caused by a race in the payment mock', 'Flaky test in test_checkout_flow caused by a race in the payment mock', 0.2, None, '2026-12-02 23:36:30'),
    ('O-mx6rls6s-8', 'bugfix', 'pytest fixtures share a temporary database; run with -p no:randomly', 'pytest fixtures share a temporary database; run with -p no:randomly', 0.45499999999999996, None, '2026-12-02 23:36:30'),
    ('O-mx6rlsb2-9', 'discovery', 'The search index is rebuilt from Postgres with a nightly reindex job', 'The search index is rebuilt from Postgres with a nightly reindex job', 0.45499999999999996, None, '2026-12-02 23:36:30'),
    ('O-mx6rlsff-a', 'discovery', 'Elasticsearch was replaced by Postgres full-text search to cut costs', 'Elasticsearch was replaced by Postgres full-text search to cut costs', 0.45499999999999996, None, '2026-12-02 23:36:30'),
    ('O-mx6rlsjr-b', 'feature', 'Feature flags live in LaunchDarkly; the payments flag gates the new checkout', 'Feature flags live in LaunchDarkly; the payments flag gates the new checkout', 0.45499999999999996, None, '2026-12-02 23:36:30'),
    ('O-mx6rlso1-c', 'discovery', 'The mobile app talks to the API through the GraphQL gateway', 'The mobile app talks to the API through the GraphQL gateway', 0.45499999999999996, None, '2026-12-02 23:36:30'),
    ('O-mx6rlsse-d', 'discovery', 'GraphQL gateway rate limits clients to 100 requests per minute', 'GraphQL gateway rate limits clients to 100 requests per minute', 0.45499999999999996, None, '2026-12-02 23:36:30'),
    ('O-mx6rlswo-e', 'discovery', 'Auth tokens are JWTs signed with RS256 and rotated monthly', 'Auth tokens are JWTs signed with RS256 and rotated monthly', 0.45499999999999996, None, '2026-12-02 23:36:31'),
    ('O-mx6rlt0y-f', 'discovery', 'Login failures spike when the identity provider times out', 'Login failures spike when the identity provider times out', 0.45499999999999996, None, '2026-12-02 23:36:31'),
    ('O-mx6rlt5s-g', 'discovery', 'The email worker sends receipts through SendGrid with retries', 'The email worker sends receipts through SendGrid with retries', 0.45499999999999996, None, '2026-12-02 23:36:31'),
    ('O-mx6rltco-h', 'discovery', 'Docker images are built with BuildKit and cached in the registry', 'Docker images are built with BuildKit and cached in the registry', 0.45499999999999996, None, '2026-12-02 23:36:31'),
    ('O-mx6rltiw-i', 'discovery', 'Kubernetes pods for the API run with 512 MiB memory limits', 'Kubernetes pods for the API run with 512 MiB memory limits', 0.45499999999999996, None, '2026-12-02 23:36:31'),
    ('O-mx6rltnx-j', 'discovery', 'The API returns 429 when the GraphQL gateway rate limit is hit', 'The API returns 429 when the GraphQL gateway rate limit is hit', 0.45499999999999996, None, '2026-12-02 23:36:32'),
    ('O-mx6rltsg-k', 'discovery', 'Orphaned uploads in S3 are cleaned by a weekly lifecycle rule', 'Orphaned uploads in S3 are cleaned by a weekly lifecycle rule', 0.45499999999999996, None, '2026-12-02 23:36:32'),
    ('O-mx6rltwq-l', 'discovery', 'Database migrations run in one transaction with a lock timeout', 'Database migrations run in one transaction with a lock timeout', 0.45499999999999996, None, '2026-12-02 23:36:32'),
    ('O-mx6rlu0z-m', 'feature', 'Migration 0042 added an index on orders.created_at', 'Migration 0042 added an index on orders.created_at', 0.45499999999999996, None, '2026-12-02 23:36:32'),
    ('O-mx6rlu5g-n', 'discovery', 'The orders table is partitioned by month since the 2025 migration', 'The orders table is partitioned by month since the 2025 migration', 0.45499999999999996, None, '2026-12-02 23:36:32'),
    ('O-mx6rlua4-o', 'discovery', 'Customer support exports orders as CSV from the admin panel', 'Customer support exports orders as CSV from the admin panel', 0.45499999999999996, None, '2026-12-02 23:36:32'),
    ('O-mx6rlueg-p', 'discovery', 'The admin panel uses server-side rendering with HTMX', 'The admin panel uses server-side rendering with HTMX', 0.45499999999999996, None, '2026-12-02 23:36:33'),
    ('O-mx6rluiq-q', 'discovery', 'Sentry captures unhandled exceptions from the API and the workers', 'Sentry captures unhandled exceptions from the API and the workers', 0.45499999999999996, None, '2026-12-02 23:36:33'),
    ('O-mx6rluo2-r', 'discovery', 'Structured logs go to Loki; queries use LogQL', 'Structured logs go to Loki; queries use LogQL', 0.45499999999999996, None, '2026-12-02 23:36:33'),
    ('O-mx6rlusl-s', 'discovery', 'Grafana dashboards track p95 latency of the checkout API', 'Grafana dashboards track p95 latency of the checkout API', 0.45499999999999996, None, '2026-12-02 23:36:33'),
    ('O-mx6rluwv-t', 'refactor', 'Checkout latency regressed after the payment mock was removed', 'Checkout latency regressed after the payment mock was removed', 0.45499999999999996, None, '2026-12-02 23:36:33'),
    ('O-mx6rlv16-u', 'discovery', 'The payment provider sandbox rejects cards with CVC 000', 'The payment provider sandbox rejects cards with CVC 000', 0.45499999999999996, None, '2026-12-02 23:36:33'),
    ('O-mx6rlv5w-v', 'discovery', 'Refunds are processed asynchronously by the refund worker', 'Refunds are processed asynchronously by the refund worker', 0.45499999999999996, None, '2026-12-02 23:36:34'),
    ('O-mx6rlvak-w', 'discovery', 'The refund worker retries failed refunds three times before alerting', 'The refund worker retries failed refunds three times before alerting', 0.45499999999999996, None, '2026-12-02 23:36:34'),
    ('O-mx6rlveu-x', 'discovery', 'On-call rotation is weekly and handoffs happen on Monday', 'On-call rotation is weekly and handoffs happen on Monday', 0.45499999999999996, None, '2026-12-02 23:36:34'),
    ('O-mx6rlvj4-y', 'discovery', 'Runbooks for incidents are stored in the docs repo under runbooks', 'Runbooks for incidents are stored in the docs repo under runbooks', 0.45499999999999996, None, '2026-12-02 23:36:34'),
    ('O-mx6rlvr9-z', 'discovery', 'The docs site is built with MkDocs and deployed to GitHub Pages', 'The docs site is built with MkDocs and deployed to GitHub Pages', 0.45499999999999996, None, '2026-12-02 23:36:34'),
    ('O-mx6rlvvu-10', 'decision', 'Decision: use uv instead of pip for dependency installs', 'Decision: use uv instead of pip for dependency installs', 0.45499999999999996, None, '2026-12-02 23:36:34'),
    ('O-mx6rlw8c-11', 'discovery', 'Noted', 'Noted', 0.42, None, '2026-12-02 23:36:35'),
    ('O-mx6rlwey-12', 'discovery', 'ok', 'ok', 0.42, None, '2026-12-02 23:36:35'),
]
LEARNINGS_COLUMNS = ('id', 'insight', 'source', 'confidence', 'quality_score', 'created_at')
LEARNINGS = [
    ('L-1e95fa5f', 'Stripe webhooks need the raw request body to verify signatures', 'manual', 0.9, 0.9500000000000001, '2026-12-02 23:36:57'),
    ('L-e96974d7', 'Staging deploys fail silently when CI is red', 'manual', 0.7, 0.75, '2026-12-02 23:36:58'),
    ('L-c4be6ad0', 'Postgres full-text search is good enough for product search', 'manual', 0.6, 0.25, '2026-12-02 23:36:58'),
    ('L-85df5e41', 'Rate limit errors from the GraphQL gateway look like 429s in the mobile app', 'manual', 0.8, 0.8500000000000001, '2026-12-02 23:36:58'),
    ('L-f02a2bcd', 'Refund retries must be idempotent like webhook handlers', 'manual', 0.75, 0.8, '2026-12-02 23:36:58'),
]
PATTERNS_COLUMNS = ('id', 'type', 'pattern', 'context', 'quality_score', 'extracted_at')
PATTERNS = [
    ('P-8c1e6ccc', 'workflow', 'Verify the stripe webhook signature before parsing the body', 'billing service', 0.39999999999999997, '2026-12-02 23:36:58'),
    ('P-280f508c', 'workflow', 'Run database migrations in one transaction with a lock timeout', 'deploy', 0.39999999999999997, '2026-12-02 23:36:58'),
    ('P-d86b6a73', 'workflow', 'Retry webhook deliveries idempotently', 'integrations', 0.39999999999999997, '2026-12-02 23:36:58'),
    ('P-b2faf338', 'workflow', 'Warm the cache after every deploy', 'release', 0.39999999999999997, '2026-12-02 23:36:58'),
]
DECISIONS_COLUMNS = ('id', 'type', 'decision', 'rationale', 'confidence', 'quality_score', 'created_at')
DECISIONS = [
    ('D001', 'technical', 'Use Postgres full-text search instead of Elasticsearch', 'cost and one less system to run', 'medium', 0.75, '2026-12-02 23:36:58'),
    ('D002', 'technical', 'Stripe webhooks are handled by the billing service only', 'one owner for payment events', 'medium', 0.75, '2026-12-02 23:36:58'),
    ('D003', 'technical', 'Deploys to staging go through the release branch', 'keeps main deployable', 'medium', 0.75, '2026-12-02 23:36:58'),
]
LOGGED = [
    ('stripe webhook', 'find-rrf', ['D002', 'P-8c1e6ccc', 'L-1e95fa5f', 'O-mx6rii96-0', 'O-mx6rjrc4-0', 'O-mx6rho3x-0']),
    ('webhook', 'find-rrf', ['D002', 'P-d86b6a73', 'L-f02a2bcd', 'O-mx6rii96-0', 'P-8c1e6ccc', 'L-1e95fa5f', 'O-mx6rjrc4-0', 'O-mx6rho3x-0']),
    ('stripe', 'find-rrf', ['D002', 'P-8c1e6ccc', 'L-1e95fa5f', 'O-mx6rii96-0', 'O-mx6rl1a6-0', 'O-mx6rjrc4-0', 'O-mx6rlr65-0', 'O-mx6rho3x-0']),
    ('staging deploys', 'find-rrf', ['D003', 'L-e96974d7', 'O-mx6rlrfq-2']),
    ('deploy', 'find-rrf', ['D003', 'P-b2faf338', 'L-e96974d7', 'O-mx6rlrpc-4', 'P-280f508c', 'O-mx6rlry5-6', 'O-mx6rlvr9-z', 'O-mx6rlrfq-2']),
    ('postgres', 'find-rrf', ['D001', 'O-mx6rlrbd-1', 'O-mx6rlsff-a', 'O-mx6rlsb2-9']),
    ('postgres search', 'find-rrf', ['D001', 'O-mx6rlsff-a', 'O-mx6rlsb2-9']),
    ('graphql rate limit', 'find-rrf', ['L-85df5e41', 'O-mx6rlsse-d', 'O-mx6rltnx-j']),
    ('rate limit 429', 'find-rrf', ['L-85df5e41', 'O-mx6rltnx-j']),
    ('refund worker retries', 'find-rrf', ['L-f02a2bcd', 'O-mx6rlvak-w']),
    ('migration', 'find-rrf', ['P-280f508c', 'O-mx6rlu0z-m', 'O-mx6rltwq-l', 'O-mx6rlu5g-n']),
    ('database migrations transaction', 'find-rrf', ['P-280f508c', 'O-mx6rltwq-l']),
    ('orphaned uploads', 'find-rrf', ['O-mx6rltsg-k']),
    ('orphan', 'find-rrf', ['O-mx6rltsg-k']),
    ('checkout latency', 'find-rrf', ['O-mx6rlusl-s', 'O-mx6rluwv-t']),
    ('payment mock', 'find-rrf', ['D002', 'O-mx6rluwv-t']),
    ('session store redis', 'find-rrf', ['O-mx6rlrtr-5']),
    ('EPIC: — stripe', 'find-rrf', ['D002', 'P-8c1e6ccc', 'L-1e95fa5f', 'O-mx6rii96-0', 'O-mx6rl1a6-0', 'O-mx6rjrc4-0', 'O-mx6rlr65-0', 'O-mx6rho3x-0']),
    ('"quoted" webhook', 'find-rrf', ['D002', 'P-d86b6a73', 'L-f02a2bcd', 'O-mx6rii96-0', 'P-8c1e6ccc', 'L-1e95fa5f', 'O-mx6rjrc4-0', 'O-mx6rho3x-0']),
    ('stripe OR NOT', 'find-rrf', ['D002', 'P-8c1e6ccc', 'L-1e95fa5f', 'O-mx6rlw8c-11', 'O-mx6rii96-0', 'O-mx6rlu0z-m', 'O-mx6rlua4-o', 'O-mx6rltsg-k', 'O-mx6rlu5g-n', 'O-mx6rl1a6-0']),
    ('the', 'find-rrf', ['D003', 'P-8c1e6ccc', 'L-85df5e41', 'O-mx6rlso1-c', 'D002', 'P-b2faf338', 'L-1e95fa5f', 'O-mx6rlr65-0', 'O-mx6rluiq-q', 'O-mx6rlu5g-n']),
    ('nightly', 'find-rrf', ['O-mx6rl1a6-0', 'O-mx6rlsb2-9']),
    ('nightly reindex', 'find-rrf', ['O-mx6rlsb2-9']),
    ('cache warmup deploy', 'find-rrf', ['D003', 'P-b2faf338', 'L-e96974d7', 'O-mx6rlry5-6', 'P-280f508c']),
    ('elasticsearch', 'find-rrf', ['D001', 'O-mx6rlsff-a']),
    ('jwt rotation', 'find-rrf', ['O-mx6rlswo-e', 'O-mx6rlveu-x']),
    ('auth tokens', 'find-rrf', ['O-mx6rlswo-e']),
    ('on-call handoff', 'find-rrf', ['O-mx6rlveu-x']),
    ('docs runbooks', 'find-rrf', ['O-mx6rlvj4-y']),
    ('kubernetes memory limits', 'find-rrf', ['O-mx6rltiw-i']),
    ('sentry exceptions', 'find-rrf', ['O-mx6rluiq-q']),
    ('grafana p95', 'find-rrf', ['O-mx6rlusl-s']),
    ('invoices', 'find-rrf', ['O-mx6rl1a6-0']),
    ('sendgrid receipts', 'find-rrf', ['O-mx6rlt5s-g']),
    ('admin panel', 'find-rrf', ['O-mx6rlueg-p', 'O-mx6rlua4-o']),
    ('htmx', 'find-rrf', ['O-mx6rlueg-p']),
    ('uv pip', 'find-rrf', ['O-mx6rlvvu-10']),
    ('Noted', 'find-rrf', ['O-mx6rlw8c-11']),
    ('customer support csv', 'find-rrf', ['O-mx6rlua4-o']),
    ('identity provider timeout', 'find-rrf', ['P-280f508c', 'O-mx6rlt0y-f', 'O-mx6rltwq-l', 'O-mx6rlv16-u']),
    ('feature flags payments', 'find-rrf', ['O-mx6rlsjr-b']),
    ('webhook—signature', 'find-rrf', ['P-8c1e6ccc', 'O-mx6rho3x-0']),
    ('structured logs loki', 'find-rrf', ['O-mx6rluo2-r']),
    ('stripe webhook', 'find-rrf', ['D002', 'P-8c1e6ccc', 'L-1e95fa5f']),
    ('deploy', 'find-rrf', ['D003', 'P-b2faf338', 'L-e96974d7', 'O-mx6rlrpc-4', 'P-280f508c']),
    ('postgres', 'find-rrf', ['D001', 'O-mx6rlrbd-1', 'O-mx6rlsff-a', 'O-mx6rlsb2-9']),
    ('webhook', 'find-rrf', ['D002']),
    ('O-mx6rlrbd-1', 'fetch', ['O-mx6rlrbd-1']),
    ('D001,O-mx6rlr65-0', 'fetch', ['D001', 'O-mx6rlr65-0']),
]
# fmt: on
# Queries CLEO answered with nothing (so it logged no row for them).
EMPTY = ["flaky test", "a", "x y z", "café naïve"]
