import { useCallback, useState } from 'react';

/**
 * Rows chosen by id in a paged list: kept across its pages, cleared when the list changes what it
 * holds (a new filter) through `clear`.
 */
export function useSelection() {
  const [selected, setSelected] = useState<ReadonlySet<string>>(() => new Set());
  const toggle = useCallback((id: string, on: boolean) => {
    setSelected((current) => {
      const next = new Set(current);
      if (on) next.add(id);
      else next.delete(id);
      return next;
    });
  }, []);
  /** Every id of `ids` chosen (`on`), or none of them. */
  const toggleAll = useCallback((ids: readonly string[], on: boolean) => {
    setSelected((current) => {
      const next = new Set(current);
      for (const id of ids) {
        if (on) next.add(id);
        else next.delete(id);
      }
      return next;
    });
  }, []);
  const clear = useCallback(() => setSelected(new Set()), []);
  return { selected, toggle, toggleAll, clear };
}

export type Selection = ReturnType<typeof useSelection>;
