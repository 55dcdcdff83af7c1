/**
 * Choosing contacts by typing part of a name, email or phone: the server's `contacts(filter:
 * { search })` answers (20 at a time, after a short pause in typing), so a picker works the same
 * with ten contacts or a million. Used by the campaign form and preview and by the send page.
 */
import { MultiSelect, Select, type ComboboxItem } from '@mantine/core';
import { useDebouncedValue } from '@mantine/hooks';
import { useMemo, useState, type ReactNode } from 'react';
import { useQuery } from 'urql';
import { graphql } from '../gql';
import type { ContactPickerOptionsQuery } from '../gql/graphql';

const ContactPickerOptions = graphql(`
  query ContactPickerOptions($search: String, $first: Int) {
    contacts(first: $first, filter: { search: $search }) {
      edges {
        node {
          _id
          name
          email
          phone
        }
      }
    }
  }
`);

/** A contact as a picker shows and hands it back: enough to name it and to reach it. */
export type ContactOption = ContactPickerOptionsQuery['contacts']['edges'][number]['node'];

/** How a contact reads in a list of options: its name and its addresses. */
export function contactLabel(c: ContactOption): string {
  const addresses = [c.phone, c.email].filter(Boolean).join(', ');
  return addresses ? `${c.name} (${addresses})` : c.name;
}

/** The server's contacts matching what is typed, with `keep` (the chosen ones) always among the options. */
function useContactOptions(keep: ContactOption[]) {
  const [search, setSearch] = useState('');
  const [debounced] = useDebouncedValue(search.trim(), 250);
  const [{ data, fetching }] = useQuery({ query: ContactPickerOptions, variables: { search: debounced || null, first: 20 } });
  const found = data?.contacts.edges.map((e) => e.node);
  const byId = useMemo(() => {
    const map = new Map<string, ContactOption>();
    for (const c of [...keep, ...(found ?? [])]) map.set(c._id, c);
    return map;
  }, [keep, found]);
  const options: ComboboxItem[] = [...byId.values()].map((c) => ({ value: c._id, label: contactLabel(c) }));
  return { search, setSearch, byId, options, fetching };
}

interface PickerProps {
  label: string;
  description?: ReactNode;
  error?: ReactNode;
  placeholder?: string;
}

/** Several contacts; `value` holds the chosen contacts themselves, so their addresses are at hand. */
export function ContactPicker({ value, onChange, ...props }: PickerProps & { value: ContactOption[]; onChange: (contacts: ContactOption[]) => void }) {
  const { search, setSearch, byId, options, fetching } = useContactOptions(value);
  return (
    <MultiSelect
      {...props}
      searchable
      searchValue={search}
      onSearchChange={setSearch}
      // The server already filtered by what was typed.
      filter={({ options: all }) => all}
      data={options}
      value={value.map((c) => c._id)}
      onChange={(ids) => onChange(ids.map((id) => byId.get(id)).filter((c): c is ContactOption => !!c))}
      nothingFoundMessage={fetching ? 'Searching…' : 'No contact matches'}
      hidePickedOptions
    />
  );
}

/** One contact, or none (`null`). */
export function ContactSelect({ value, onChange, ...props }: PickerProps & { value: ContactOption | null; onChange: (contact: ContactOption | null) => void }) {
  const keep = useMemo(() => (value ? [value] : []), [value]);
  const { setSearch, byId, options, fetching } = useContactOptions(keep);
  return (
    <Select
      {...props}
      searchable
      clearable
      onSearchChange={setSearch}
      filter={({ options: all }) => all}
      data={options}
      value={value?._id ?? null}
      onChange={(id) => onChange(id ? (byId.get(id) ?? null) : null)}
      nothingFoundMessage={fetching ? 'Searching…' : 'No contact matches'}
    />
  );
}
