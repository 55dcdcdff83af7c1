import { Select } from '@mantine/core';

/** Every IANA time zone the browser knows, and UTC (which it lists as `UTC` only in some engines). */
const ZONES = [...new Set(['UTC', ...Intl.supportedValuesOf('timeZone')])];

interface Props {
  label: string;
  description?: string;
  value: string | null;
  onChange: (zone: string | null) => void;
  error?: string;
  /** Whether it may be emptied (a contact's own zone; the organization's is always set). */
  clearable?: boolean;
}

/** A time zone picked by its IANA name, searchable (type "Nairobi"). */
export function TimeZoneSelect({ label, description, value, onChange, error, clearable = false }: Props) {
  const data = value && !ZONES.includes(value) ? [value, ...ZONES] : ZONES;
  return (
    <Select
      label={label}
      description={description}
      data={data}
      value={value}
      onChange={onChange}
      searchable
      clearable={clearable}
      allowDeselect={clearable}
      limit={50}
      nothingFoundMessage="No such time zone"
      error={error}
    />
  );
}
