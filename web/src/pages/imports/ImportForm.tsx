import { Alert, Button, Card, FileInput, Group, List, MultiSelect, NativeSelect, Progress, Radio, SimpleGrid, Stack, TagsInput, Text, Title } from '@mantine/core';
import { useEffect, useState, type FormEvent } from 'react';
import { useNavigate } from 'react-router';
import { useClient, useQuery, type CombinedError } from 'urql';
import { ErrorAlert } from '../../components/ErrorAlert';
import type { ContactImportExisting, ContactImportMatchBy } from '../../gql/graphql';
import { DELIMITERS, readPreview, type CsvPreview, type Delimiter } from '../../lib/csv-preview';
import { formatPercent } from '../../lib/format';
import { ColumnMapping } from './ColumnMapping';
import { CsvPreviewTable } from './CsvPreviewTable';
import { defaultMatchBy, mappingOf, suggestedChoice, type ColumnChoice } from './column-targets';
import { DELIMITER_LABELS, formatBytes, ImportGroupOptions } from './import-fields';
import { MAX_FILE_BYTES, startImport } from './start-import';

/** The fields this form has a control for; a problem naming another is shown whole, above the form. */
const FIELDS = ['file', 'csv', 'mapping', 'delimiter', 'matchBy', 'existing', 'groups', 'tags'];

/** Every message of a 400's `details` for `field` (a mapping can have several problems). */
function problemsOf(error: CombinedError | undefined, field: string): string[] {
  const details = (error?.graphQLErrors ?? []).flatMap((e) => ((e.extensions?.details ?? []) as { field: string; message: string }[]));
  return details.filter((d) => d.field.replace(/^input\./, '').split('.')[0] === field).map((d) => d.message);
}

/** Whether every problem of a 400 lands next to a control (else the whole message is shown above the form). */
function namesOnlyFields(error: CombinedError | undefined): boolean {
  const details = (error?.graphQLErrors ?? []).flatMap((e) => ((e.extensions?.details ?? []) as { field: string }[]));
  return details.length > 0 && details.every((d) => FIELDS.includes(d.field.replace(/^input\./, '').split('.')[0]!));
}

/**
 * A new import: the file picked and previewed in the browser, each column sent to a field or an
 * attribute (chosen for it as the server would, changed at will), what to do with existing
 * contacts, groups and tags to add; then started, and followed on the import's page.
 */
export function ImportForm() {
  const client = useClient();
  const navigate = useNavigate();
  const [file, setFile] = useState<File | null>(null);
  const [delimiter, setDelimiter] = useState<Delimiter | null>(null);
  const [preview, setPreview] = useState<CsvPreview | null>(null);
  const [previewError, setPreviewError] = useState<string | null>(null);
  const [choices, setChoices] = useState<ColumnChoice[]>([]);
  const [matchBy, setMatchBy] = useState<ContactImportMatchBy | null>(null);
  const [existing, setExisting] = useState<ContactImportExisting>('update');
  const [groups, setGroups] = useState<string[]>([]);
  const [tags, setTags] = useState<string[]>([]);
  const [starting, setStarting] = useState(false);
  const [uploaded, setUploaded] = useState<number | null>(null);
  const [error, setError] = useState<CombinedError | undefined>();
  const [{ data: groupData }] = useQuery({ query: ImportGroupOptions });
  const groupOptions = (groupData?.groups.edges ?? []).map(({ node }) => ({ value: node._id, label: node.name }));

  // A new file, or another separator, is read again; its columns start with the targets suggested for them.
  useEffect(() => {
    setPreview(null);
    setPreviewError(null);
    if (!file) return;
    let current = true;
    readPreview(file, delimiter ?? undefined).then(
      (read) => {
        if (!current) return;
        if (!read.headers.some(Boolean)) return setPreviewError('The file must start with a header row of column names.');
        setPreview(read);
        setChoices(read.headers.map(suggestedChoice));
      },
      (e: Error) => current && setPreviewError(`The start of the file is not CSV Herald can read: ${e.message}`),
    );
    return () => {
      current = false;
    };
  }, [file, delimiter]);

  const pickFile = (picked: File | null) => {
    setFile(picked);
    setDelimiter(null);
    setMatchBy(null);
    setError(undefined);
  };

  const tooLarge = !!file && file.size > MAX_FILE_BYTES;
  const effectiveMatchBy = matchBy ?? defaultMatchBy(choices);

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    if (!file || !preview || tooLarge) return;
    setStarting(true);
    setError(undefined);
    const settings = { mapping: mappingOf(choices), delimiter: preview.delimiter, matchBy: effectiveMatchBy, existing, groups, tags };
    const started = await startImport(client, file, settings, setUploaded);
    setStarting(false);
    setUploaded(null);
    if (started.error) setError(started.error);
    else navigate(`/imports/${started.id}`);
  };

  const fileError = tooLarge ? `The file is ${formatBytes(file.size)}; an import takes at most 100 MiB.` : (previewError ?? [...problemsOf(error, 'file'), ...problemsOf(error, 'csv')][0]);
  const mappingProblems = problemsOf(error, 'mapping');

  return (
    <Card withBorder component="form" onSubmit={submit} aria-labelledby="new-import-title">
      <Stack>
        <Title order={3} id="new-import-title">
          New import
        </Title>
        {error && !namesOnlyFields(error) && <ErrorAlert error={error} title="The import did not start" />}
        <FileInput
          label="CSV file"
          description="A header row of column names, then one contact per row; separated by commas, semicolons, tabs or pipes. Up to 100 MiB."
          accept=".csv,.tsv,.txt,text/csv,text/plain,text/tab-separated-values"
          value={file}
          onChange={pickFile}
          clearable
          clearButtonProps={{ 'aria-label': 'Remove the file' }}
          error={fileError}
        />
        {file && preview && (
          <>
            <Group align="end">
              <NativeSelect
                label="Separator"
                data={DELIMITERS.map((d) => ({ value: d, label: DELIMITER_LABELS[d] }))}
                value={preview.delimiter}
                onChange={(e) => setDelimiter(e.currentTarget.value as Delimiter)}
                error={problemsOf(error, 'delimiter')[0]}
              />
            </Group>
            <CsvPreviewTable preview={preview} fileName={file.name} />
            <Title order={4}>Columns</Title>
            <Text size="sm">Where each column goes. Columns named like a contact field go to it; choose Attribute… to keep a column as an attribute.</Text>
            {mappingProblems.length > 0 && (
              <Alert color="red" title="The columns need a change" role="alert">
                <List size="sm">
                  {mappingProblems.map((m) => (
                    <List.Item key={m}>{m}</List.Item>
                  ))}
                </List>
              </Alert>
            )}
            <ColumnMapping choices={choices} rows={preview.rows} onChange={setChoices} />
            <Title order={4}>Options</Title>
            <SimpleGrid cols={{ base: 1, sm: 2 }}>
              <Radio.Group
                label="Find existing contacts by"
                value={effectiveMatchBy}
                onChange={(v) => setMatchBy(v as ContactImportMatchBy)}
                error={problemsOf(error, 'matchBy')[0]}
              >
                <Group mt="xs">
                  <Radio value="email" label="Email" />
                  <Radio value="phone" label="Phone" />
                </Group>
              </Radio.Group>
              <Radio.Group label="Existing contacts" value={existing} onChange={(v) => setExisting(v as ContactImportExisting)} error={problemsOf(error, 'existing')[0]}>
                <Group mt="xs">
                  <Radio value="update" label="Update them" />
                  <Radio value="skip" label="Leave them as they are" />
                </Group>
              </Radio.Group>
              <MultiSelect
                label="Add to groups"
                description="Every imported contact joins them"
                data={groupOptions}
                value={groups}
                onChange={setGroups}
                searchable
                clearable
                nothingFoundMessage="No such group"
                error={problemsOf(error, 'groups')[0]}
              />
              <TagsInput label="Add tags" description="Every imported contact gets them; press Enter after each" value={tags} onChange={setTags} error={problemsOf(error, 'tags')[0]} />
            </SimpleGrid>
            {uploaded !== null && (
              <Stack gap={4}>
                <Progress value={uploaded * 100} aria-label="Upload progress" />
                <Text size="sm">Uploading: {formatPercent(uploaded, 1)} sent</Text>
              </Stack>
            )}
            <Group justify="flex-end">
              <Button type="submit" loading={starting} disabled={tooLarge}>
                Start import
              </Button>
            </Group>
          </>
        )}
      </Stack>
    </Card>
  );
}
