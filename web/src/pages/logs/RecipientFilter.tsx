import { Button, Group, TextInput } from '@mantine/core';
import { useState, type FormEvent } from 'react';

interface Props {
  /** The address the list is filtered by (the URL's), or empty. */
  value: string;
  onSearch: (address: string) => void;
  /** The server's message when it is not an address. */
  error?: string;
}

/**
 * The logs of one address: typed, then applied on Enter or the button (a number half typed is not
 * an address, and would only be refused). The server reads it as a send does (any case, a national
 * number); a new `value` (the filters cleared) starts the field again, as the page keys it by value.
 */
export function RecipientFilter({ value, onSearch, error }: Props) {
  const [input, setInput] = useState(value);
  const submit = (e: FormEvent) => {
    e.preventDefault();
    onSearch(input.trim());
  };
  return (
    <form onSubmit={submit} role="search" aria-label="Logs of a recipient">
      <Group align="flex-end" gap="xs">
        <TextInput label="Recipient" description="An email address or phone number" type="search" value={input} onChange={(e) => setInput(e.currentTarget.value)} error={error} />
        <Button type="submit" variant="default">
          Filter by recipient
        </Button>
      </Group>
    </form>
  );
}
