import { Button, Group, Select, SimpleGrid, TextInput } from '@mantine/core';
import { useDebouncedValue } from '@mantine/hooks';
import { useEffect, useRef, useState } from 'react';
import { useSearchParams } from 'react-router';
import { useQuery } from 'urql';
import type { ContactFilter } from '../../gql/graphql';
import { GroupOptions } from './documents';
import { PARAMS, TEXT_PARAMS, filterOf } from './filters';

type TextParam = (typeof TEXT_PARAMS)[number];
type Texts = Record<TextParam, string>;

const textsOf = (params: URLSearchParams) => Object.fromEntries(TEXT_PARAMS.map((p) => [p, params.get(p) ?? ''])) as Texts;

/**
 * The list's filters, kept in the URL's search parameters (see filters.ts). Text filters are
 * typed into local state and written to the URL 300 ms after the last key; lists are written at once.
 */
export function useContactFilters() {
  const [params, setParams] = useSearchParams();
  const [texts, setTexts] = useState<Texts>(() => textsOf(params));
  const [settled] = useDebouncedValue(JSON.stringify(texts), 300);
  // The latest params and setter, read by the effect below without re-running it when they change.
  const latest = useRef({ params, setParams });
  latest.current = { params, setParams };

  useEffect(() => {
    const next = JSON.parse(settled) as Texts;
    const { params: current, setParams: write } = latest.current;
    if (TEXT_PARAMS.every((p) => (current.get(p) ?? '') === next[p])) return;
    const out = new URLSearchParams(current);
    for (const p of TEXT_PARAMS) {
      if (next[p]) out.set(p, next[p]);
      else out.delete(p);
    }
    write(out, { replace: true });
  }, [settled]);

  // The URL changed under the inputs (a link, the back button): the inputs follow it.
  const paramTexts = JSON.stringify(textsOf(params));
  useEffect(() => {
    if (paramTexts !== settled) setTexts(JSON.parse(paramTexts) as Texts);
    // eslint-disable-next-line react-hooks/exhaustive-deps -- only when the URL's texts change
  }, [paramTexts]);

  const filter: ContactFilter = filterOf(params);
  return {
    params,
    filter,
    texts,
    setText: (name: TextParam, value: string) => setTexts((t) => ({ ...t, [name]: value })),
    setParam(name: string, value: string | null) {
      const out = new URLSearchParams(params);
      if (value) out.set(name, value);
      else out.delete(name);
      setParams(out, { replace: true });
    },
    clear() {
      setTexts(textsOf(new URLSearchParams()));
      setParams(new URLSearchParams(), { replace: true });
    },
  };
}

export type ContactFiltersState = ReturnType<typeof useContactFilters>;

interface Props {
  filters: ContactFiltersState;
  /** The server's messages for the filter's fields (a bad attribute key, say). */
  errors: Record<string, string>;
}

/** The controls of the list's filters: search, group, tag, a channel left, an attribute's value. */
export function ContactFilters({ filters, errors }: Props) {
  const { params, texts, setText, setParam, clear } = filters;
  const [{ data }] = useQuery({ query: GroupOptions });
  const text = (name: TextParam) => ({ value: texts[name], onChange: (e: { currentTarget: HTMLInputElement }) => setText(name, e.currentTarget.value) });

  const group = params.get(PARAMS.group);
  const groupOptions = (data?.groups.edges ?? []).map(({ node }) => ({ value: node._id, label: node.name }));
  if (group && data && !groupOptions.some((o) => o.value === group)) groupOptions.push({ value: group, label: 'Unknown group' });
  const anySet = [...params.keys()].length > 0 || Object.values(texts).some(Boolean);

  return (
    <form role="search" aria-label="Filter contacts" onSubmit={(e) => e.preventDefault()}>
      <SimpleGrid cols={{ base: 1, sm: 3, lg: 6 }} mb="md">
        <TextInput label="Search" description="Name, email or phone" type="search" {...text(PARAMS.search)} error={errors.search} />
        <Select label="Group" description="Members only" data={groupOptions} value={group} onChange={(v) => setParam(PARAMS.group, v)} clearable searchable error={errors.group} />
        <TextInput label="Tag" description="Contacts with this tag" {...text(PARAMS.tag)} error={errors.tag} />
        <Select
          label="Unsubscribed from"
          description="Contacts who left"
          data={[
            { value: 'email', label: 'Email' },
            { value: 'sms', label: 'SMS' },
            { value: 'whatsapp', label: 'WhatsApp' },
          ]}
          value={params.get(PARAMS.unsubscribed)}
          onChange={(v) => setParam(PARAMS.unsubscribed, v)}
          clearable
          error={errors.unsubscribed}
        />
        <TextInput label="Attribute" description="A key, such as plan" {...text(PARAMS.attributeKey)} error={errors.attributes} />
        <TextInput label="Attribute value" description="Text, a number, true or false" {...text(PARAMS.attributeValue)} />
      </SimpleGrid>
      {anySet && (
        <Group justify="flex-end" mt="-xs" mb="md">
          <Button variant="default" size="xs" onClick={clear}>
            Clear filters
          </Button>
        </Group>
      )}
    </form>
  );
}
