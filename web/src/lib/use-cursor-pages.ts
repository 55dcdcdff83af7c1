import { useState } from 'react';

/**
 * The `after` cursor of the page shown and the way back: `next(endCursor)` moves on, `previous()`
 * returns, `reset()` starts over (when a filter changes).
 */
export function useCursorPages() {
  const [history, setHistory] = useState<(string | null)[]>([]);
  const [after, setAfter] = useState<string | null>(null);
  return {
    after,
    history,
    next(endCursor: string | null | undefined) {
      if (!endCursor) return;
      setHistory((h) => [...h, after]);
      setAfter(endCursor);
    },
    previous() {
      setHistory((h) => {
        setAfter(h[h.length - 1] ?? null);
        return h.slice(0, -1);
      });
    },
    reset() {
      setHistory([]);
      setAfter(null);
    },
  };
}
