/**
 * The signed-in caller's JWT, kept in `sessionStorage` (never in a URL, never in localStorage): it
 * lives as long as the tab, and logging out forgets it. Components read it through `useSession`.
 */
import { useSyncExternalStore } from 'react';

const KEY = 'herald.token';
const listeners = new Set<() => void>();

export function getToken(): string | null {
  return sessionStorage.getItem(KEY);
}

export function setToken(token: string | null): void {
  if (token) sessionStorage.setItem(KEY, token);
  else sessionStorage.removeItem(KEY);
  for (const notify of listeners) notify();
}

function subscribe(notify: () => void): () => void {
  listeners.add(notify);
  return () => listeners.delete(notify);
}

/** The current token, re-rendering on login and logout. */
export function useToken(): string | null {
  return useSyncExternalStore(subscribe, getToken);
}
