import CircuitBreaker from 'opossum';
import { providerCircuitChanges, providerCircuitsOpen } from '../lib/metrics.js';
import type { Channel } from './types.js';

/**
 * A circuit per provider account, in each process (opossum): a provider that keeps failing for its
 * own reasons (refused connections, timeouts, 5xx, a refused bind, refused credentials) is `open`
 * and sent nothing, so its channel's next provider carries the work at once instead of after the
 * tries of every batch; after `resetMs` one send probes it (`half-open`), and its success closes it.
 * A call counts as failed when none of its recipients was answered by the provider (every one
 * failed `retryable` or `providerFault`); a final answer about a recipient is the provider working.
 * The circuit is the way to the next provider: a channel's last provider is called whatever its
 * circuit (there is nowhere else to go), and counts only through calls its circuit lets through.
 */

export type CircuitState = 'closed' | 'open' | 'half-open';

export interface CircuitOptions {
  /** How long an open circuit stays open before one send probes it. */
  resetMs: number;
  /** Calls within the window before the failure share may open it. */
  volume: number;
  /** The rolling window the calls are counted in. */
  windowMs: number;
}

/** The provider a circuit is of. */
export interface CircuitOf {
  id: string;
  /** The provider's version (its last change): a changed provider starts with a closed circuit of its own. */
  version: number;
  orgId: string;
  channel: Channel;
  type: string;
}

/** What a call through the circuit came to: its value, and whether it counts against the provider (with why). */
export interface Attempt<T> {
  value: T;
  failed: boolean;
  error?: string;
}

/** Carries a failed attempt's value through opossum's rejection. */
class Failed<T> extends Error {
  constructor(readonly attempt: Attempt<T>) {
    super(attempt.error ?? 'provider failed');
  }
}

const keyOf = (of: Pick<CircuitOf, 'id' | 'version'>) => `${of.id}@${of.version}`;

type Breaker = CircuitBreaker<[() => Promise<Attempt<unknown>>], Attempt<unknown>>;

/** Above this many providers seen, circuits that are closed are let go (their counts start again). */
const MAX_CIRCUITS = 10_000;

export class Circuits {
  private readonly breakers = new Map<string, { breaker: Breaker; of: CircuitOf }>();

  constructor(
    private readonly options: CircuitOptions,
    /** Told of every change (to record it where the API reads it), with the last failure's reason. */
    private readonly onChange: (of: CircuitOf, state: CircuitState, error: string | null) => void,
  ) {}

  /** The provider's circuit as this process sees it. */
  state(of: Pick<CircuitOf, 'id' | 'version'>): CircuitState {
    const b = this.breakers.get(keyOf(of))?.breaker;
    return !b || b.closed ? 'closed' : b.halfOpen ? 'half-open' : 'open';
  }

  /** Whether a call may go through the circuit now: closed, or half-open with no probe in flight. */
  allows(of: Pick<CircuitOf, 'id' | 'version'>): boolean {
    const b = this.breakers.get(keyOf(of))?.breaker;
    return !b || b.closed || b.pendingClose;
  }

  /**
   * Runs `attempt` through the provider's circuit; null when the circuit is open (nothing was
   * called). A failed attempt's value is answered all the same.
   */
  async run<T>(of: CircuitOf, attempt: () => Promise<Attempt<T>>): Promise<T | null> {
    const breaker = this.breakerOf(of);
    try {
      return ((await breaker.fire(attempt as () => Promise<Attempt<unknown>>)) as Attempt<T>).value;
    } catch (err) {
      if (err instanceof Failed) return (err as Failed<T>).attempt.value;
      if ((err as { code?: string }).code === 'EOPENBREAKER') return null;
      throw err;
    }
  }

  close() {
    for (const { breaker } of this.breakers.values()) breaker.shutdown();
    this.breakers.clear();
  }

  private breakerOf(of: CircuitOf): Breaker {
    const key = keyOf(of);
    const known = this.breakers.get(key);
    if (known) return known.breaker;
    if (this.breakers.size >= MAX_CIRCUITS) {
      for (const [id, { breaker }] of this.breakers) {
        if (!breaker.closed) continue;
        breaker.shutdown();
        this.breakers.delete(id);
      }
    }
    const breaker: Breaker = new CircuitBreaker(
      async (attempt: () => Promise<Attempt<unknown>>) => {
        const result = await attempt();
        if (result.failed) throw new Failed(result);
        return result;
      },
      {
        timeout: false,
        resetTimeout: this.options.resetMs,
        volumeThreshold: this.options.volume,
        errorThresholdPercentage: 50,
        rollingCountTimeout: this.options.windowMs,
        rollingCountBuckets: 10,
        enableSnapshots: false,
      },
    );
    let lastError: string | null = null;
    breaker.on('failure', (err: unknown) => {
      if (err instanceof Failed) lastError = err.message;
    });
    const labels = { channel: of.channel, provider: of.type };
    let shown: CircuitState = 'closed';
    const change = (state: CircuitState) => {
      if (shown !== 'closed') providerCircuitsOpen.dec({ ...labels, state: shown });
      if (state !== 'closed') providerCircuitsOpen.inc({ ...labels, state });
      shown = state;
      providerCircuitChanges.inc({ ...labels, state });
      this.onChange(of, state, lastError);
    };
    breaker.on('open', () => change('open'));
    breaker.on('halfOpen', () => change('half-open'));
    breaker.on('close', () => change('closed'));
    breaker.on('shutdown', () => {
      if (shown !== 'closed') providerCircuitsOpen.dec({ ...labels, state: shown });
    });
    this.breakers.set(key, { breaker, of });
    return breaker;
  }
}
