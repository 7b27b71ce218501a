// GET /metrics: prom-client on a registry of the server's own (two servers in one process keep apart).

import type { EngineStats } from '@vlmkit/models';
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';

export interface ServerMetrics {
  registry: Registry;
  requests: Counter<'route' | 'status'>;
  timeToFirstToken: Histogram;
  timePerOutputToken: Histogram;
  tokensGenerated: Counter;
}

/** The metrics; the gauges read `stats()` (the engine's, undefined while it loads) and `waiting` when scraped. */
export function serverMetrics(stats: () => EngineStats | undefined, waiting: () => number): ServerMetrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const gauge = (name: string, help: string, read: (s: EngineStats) => number) =>
    new Gauge({
      name,
      help,
      registers: [registry],
      collect() {
        const s = stats();
        this.set(s === undefined ? 0 : read(s));
      },
    });
  gauge('vlmkit_running_requests', 'Requests in the running batch.', (s) => s.running);
  gauge('vlmkit_max_batch', "The engine's batch size limit.", (s) => s.maxBatch);
  gauge('vlmkit_kv_cache_bytes', 'Bytes of KV cache held by running requests.', (s) => s.kvBytes);
  gauge('vlmkit_kv_cache_limit_bytes', "The engine's KV cache memory limit.", (s) => s.kvLimitBytes);
  new Gauge({
    name: 'vlmkit_queue_depth',
    help: "Requests admitted and waiting: the engine's queue and those still reading their media.",
    registers: [registry],
    collect() {
      this.set((stats()?.queued ?? 0) + waiting());
    },
  });
  return {
    registry,
    requests: new Counter({
      name: 'vlmkit_http_requests_total',
      help: 'HTTP requests by route and status code.',
      labelNames: ['route', 'status'],
      registers: [registry],
    }),
    timeToFirstToken: new Histogram({
      name: 'vlmkit_time_to_first_token_seconds',
      help: 'From the request to its first answer token: queue, media, vision encoder and prefill.',
      buckets: [0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
      registers: [registry],
    }),
    timePerOutputToken: new Histogram({
      name: 'vlmkit_time_per_output_token_seconds',
      help: "Per request: the time after its first token over the tokens after it (the decode step's latency as that request saw it).",
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1],
      registers: [registry],
    }),
    tokensGenerated: new Counter({ name: 'vlmkit_generated_tokens_total', help: 'Answer tokens generated.', registers: [registry] }),
  };
}
