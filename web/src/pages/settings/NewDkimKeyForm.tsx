import { Button, Group, Modal, Radio, Stack, TextInput } from '@mantine/core';
import { useState, type FormEvent } from 'react';
import { useMutation } from 'urql';
import { ErrorAlert } from '../../components/ErrorAlert';
import { graphql } from '../../gql';
import type { DkimAlgorithm } from '../../gql/graphql';
import { fieldErrors } from '../../lib/errors';

export const ALGORITHM_LABELS: Record<DkimAlgorithm, string> = { rsa: 'RSA', ed25519: 'Ed25519' };

const ALGORITHMS: { value: DkimAlgorithm; label: string; description: string }[] = [
  { value: 'rsa', label: 'RSA (2048 bits)', description: 'Every mailbox provider checks it. Make this one first.' },
  { value: 'ed25519', label: 'Ed25519', description: 'Short and fast to sign; not every provider checks it yet, so add it beside an RSA key.' },
];

const CreateDkimKey = graphql(`
  mutation CreateDkimKey($domain: String!, $selector: String, $algorithm: DkimAlgorithm) {
    createDkimKey(domain: $domain, selector: $selector, algorithm: $algorithm) {
      ...DkimKeyFields
    }
  }
`);

/** Makes a key for a sending domain; the page then shows the record to publish. */
export function NewDkimKeyForm({ onClose }: { onClose: () => void }) {
  const [domain, setDomain] = useState('');
  const [selector, setSelector] = useState('');
  const [algorithm, setAlgorithm] = useState<DkimAlgorithm>('rsa');
  const [state, create] = useMutation(CreateDkimKey);
  const errors = fieldErrors(state.error);

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const result = await create({ domain, selector: selector.trim() || null, algorithm });
    if (result.data) onClose();
  };
  return (
    <Modal opened onClose={onClose} closeButtonProps={{ 'aria-label': 'Close' }} title="New DKIM key">
      <form onSubmit={submit}>
        <Stack>
          {!Object.keys(errors).length && <ErrorAlert error={state.error} />}
          <TextInput
            label="Domain"
            description="The domain of your From address, such as example.com."
            required
            value={domain}
            onChange={(e) => setDomain(e.currentTarget.value)}
            error={errors.domain}
            data-autofocus
          />
          <TextInput
            label="Selector"
            description="Optional: left empty, herald and today’s date (with ed after it for Ed25519)."
            value={selector}
            onChange={(e) => setSelector(e.currentTarget.value)}
            error={errors.selector}
            maxLength={63}
          />
          <Radio.Group label="Algorithm" value={algorithm} onChange={(v) => setAlgorithm(v as DkimAlgorithm)} error={errors.algorithm}>
            <Stack gap="xs" mt="xs">
              {ALGORITHMS.map((a) => (
                <Radio key={a.value} value={a.value} label={a.label} description={a.description} />
              ))}
            </Stack>
          </Radio.Group>
          <Group justify="flex-end">
            <Button variant="default" onClick={onClose}>
              Cancel
            </Button>
            <Button type="submit" loading={state.fetching}>
              Create key
            </Button>
          </Group>
        </Stack>
      </form>
    </Modal>
  );
}
