/**
 * The Liquid variables a message can use (platform.md, "Personalised messages"), as a menu that
 * inserts `{{ variable }}` where the caret is: the contact's fields, one entry per attribute key the
 * organization's contacts have (`contactAttributeKeys`), and the organization's and campaign's.
 */
import { Button, Code, Menu, Text } from '@mantine/core';
import { useQuery } from 'urql';
import { graphql } from '../../gql';

const VariableMenuKeys = graphql(`
  query VariableMenuKeys {
    contactAttributeKeys
  }
`);

const CONTACT_FIELDS: [string, string][] = [
  ['contact.firstName', 'First name'],
  ['contact.name', 'Full name'],
  ['contact.email', 'Email'],
  ['contact.phone', 'Phone'],
  ['contact.organization', 'Company'],
];

/** `{{ variable }}`, as inserted. */
export const liquidOutput = (variable: string) => `{{ ${variable} }}`;

/** An attribute as Liquid reads it: a key that does not start like a name (`2fa`) only in brackets. */
const attributeVariable = (key: string) => (/^[A-Za-z_]/.test(key) ? `contact.attributes.${key}` : `contact.attributes["${key}"]`);

interface Props {
  /** The field it inserts into, for the button's name: `Insert variable into SMS text`. */
  target: string;
  onInsert: (text: string) => void;
  /** A campaign's message: `campaign.name` and `unsubscribe_url` are offered too. */
  campaign?: boolean;
  disabled?: boolean;
}

export function VariableMenu({ target, onInsert, campaign = true, disabled }: Props) {
  const [{ data, fetching }] = useQuery({ query: VariableMenuKeys });
  const keys = data?.contactAttributeKeys ?? [];
  const others: [string, string][] = [['organization.name', 'Your organization'], ...(campaign ? ([['campaign.name', 'Campaign name'], ['unsubscribe_url', 'Unsubscribe link']] as [string, string][]) : [])];
  const item = ([variable, label]: [string, string]) => (
    <Menu.Item key={variable} onClick={() => onInsert(liquidOutput(variable))} rightSection={<Text size="xs" c="dimmed">{label}</Text>}>
      <Code>{variable}</Code>
    </Menu.Item>
  );
  return (
    // Without the initial focus placeholder: a focusable element without a role is no child a menu may have (axe).
    <Menu position="bottom-start" shadow="md" withinPortal withInitialFocusPlaceholder={false}>
      <Menu.Target>
        <Button variant="default" size="xs" disabled={disabled} aria-label={`Insert variable into ${target}`}>
          Insert variable
        </Button>
      </Menu.Target>
      <Menu.Dropdown mah={360} style={{ overflowY: 'auto' }}>
        <Menu.Label>Contact</Menu.Label>
        {CONTACT_FIELDS.map(item)}
        <Menu.Label>Contact attributes</Menu.Label>
        {keys.map((key) => item([attributeVariable(key), 'Attribute']))}
        {!keys.length && <Menu.Item disabled>{fetching ? 'Loading…' : 'Your contacts have no attributes yet'}</Menu.Item>}
        <Menu.Label>Organization and campaign</Menu.Label>
        {others.map(item)}
      </Menu.Dropdown>
    </Menu>
  );
}
