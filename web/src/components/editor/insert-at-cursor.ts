import { useCallback, useRef, type RefObject } from 'react';

type TextControl = HTMLTextAreaElement | HTMLInputElement;

/**
 * Inserting text where the caret is (or over the selection) in a controlled text input or area,
 * then putting the caret after it: the field keeps its selection while a menu has the focus, so
 * the insertion lands where the user left off; into an untouched field it goes at the end.
 */
export function useInsertAtCursor<T extends TextControl>(value: string, onChange: (value: string) => void): { ref: RefObject<T | null>; insert: (text: string) => void } {
  const ref = useRef<T>(null);
  const insert = useCallback(
    (text: string) => {
      const el = ref.current;
      const start = el?.selectionStart ?? value.length;
      const end = el?.selectionEnd ?? start;
      onChange(value.slice(0, start) + text + value.slice(end));
      const caret = start + text.length;
      // After React has rendered the new value, or the caret would be put into the old one.
      requestAnimationFrame(() => {
        el?.focus();
        el?.setSelectionRange(caret, caret);
      });
    },
    [value, onChange],
  );
  return { ref, insert };
}
