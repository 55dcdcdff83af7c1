/**
 * An email's body: rich text (TipTap) with a small toolbar, or its HTML source. Loaded only where
 * an email is written (`React.lazy`), so the rest of the console never downloads the editor.
 * A body the editor would rewrite (see `liquid-html.ts`) opens in Source and stays there unless
 * the user chooses otherwise.
 */
import { ActionIcon, Alert, Button, Group, Input, Popover, SegmentedControl, Stack, Text, TextInput, Textarea, Tooltip } from '@mantine/core';
import { EditorContent, useEditor, useEditorState, type Editor } from '@tiptap/react';
import { useEffect, useId, useRef, useState, type ReactNode } from 'react';
import { styleNonce } from '../../lib/nonce';
import { EMAIL_EXTENSIONS } from './extensions';
import { useInsertAtCursor } from './insert-at-cursor';
import { liquidSafe, roundTrips } from './liquid-html';
import { VariableMenu } from './VariableMenu';
import './email-editor.css';

export interface EmailEditorProps {
  /** The field's name, read aloud and by the variable menu: `Email text`. */
  label: string;
  value: string;
  onChange: (html: string) => void;
  error?: ReactNode;
}

type Mode = 'rich' | 'source';

export default function EmailEditor({ label, value, onChange, error }: EmailEditorProps) {
  const [mode, setMode] = useState<Mode>(() => (roundTrips(value) ? 'rich' : 'source'));
  const [kept, setKept] = useState(false);
  const labelId = useId();
  const errorId = useId();

  const toRich = (force = false) => {
    if (!force && !roundTrips(value)) return setKept(true);
    setKept(false);
    setMode('rich');
  };

  return (
    <Input.Wrapper label={label} labelElement="div" labelProps={{ id: labelId }} error={error} errorProps={{ id: errorId }}>
      <Stack gap="xs" mt={4}>
        <Group justify="space-between" gap="xs">
          <SegmentedControl
            size="xs"
            aria-label={`${label}: how to write it`}
            value={mode}
            onChange={(m) => (m === 'rich' ? toRich() : setMode('source'))}
            data={[
              { value: 'rich', label: 'Rich text' },
              { value: 'source', label: 'Source' },
            ]}
          />
        </Group>
        {kept && mode === 'source' && (
          <Alert color="yellow" title="This HTML stays in Source" role="status" styles={{ title: { color: 'var(--mantine-color-text)' } }}>
            <Stack gap="xs">
              <Text size="sm">
                The rich-text editor would rewrite parts of it: markup it does not know (tables, styles, comments) or Liquid tags between blocks. Keep editing the HTML
                here, or let the editor rewrite it.
              </Text>
              <Group>
                <Button size="xs" variant="default" onClick={() => toRich(true)}>
                  Switch to rich text anyway
                </Button>
              </Group>
            </Stack>
          </Alert>
        )}
        {mode === 'rich' ? (
          <RichText label={label} labelId={labelId} value={value} onChange={onChange} invalid={!!error} errorId={error ? errorId : undefined} />
        ) : (
          <SourceText label={label} labelId={labelId} value={value} onChange={onChange} invalid={!!error} errorId={error ? errorId : undefined} />
        )}
      </Stack>
    </Input.Wrapper>
  );
}

interface ModeProps {
  label: string;
  labelId: string;
  value: string;
  onChange: (html: string) => void;
  invalid: boolean;
  errorId?: string;
}

function SourceText({ label, labelId, value, onChange, invalid, errorId }: ModeProps) {
  const { ref, insert } = useInsertAtCursor<HTMLTextAreaElement>(value, onChange);
  return (
    <Stack gap="xs">
      <Group gap="xs">
        <VariableMenu target={label} onInsert={insert} />
      </Group>
      <Textarea
        ref={ref}
        aria-labelledby={labelId}
        aria-describedby={errorId}
        error={invalid}
        autosize
        minRows={8}
        maxRows={24}
        styles={{ input: { fontFamily: 'var(--mantine-font-family-monospace)', fontSize: 'var(--mantine-font-size-sm)' } }}
        value={value}
        onChange={(e) => onChange(e.currentTarget.value)}
      />
      <Text size="xs" c="dimmed">
        HTML (sent as HTML with a plain-text alternative) or plain text (sent as it is). Any Liquid works here, blocks wrapped in {'{% if %}'} tags included.
      </Text>
    </Stack>
  );
}

function RichText({ label, labelId, value, onChange, invalid, errorId }: ModeProps) {
  // What the editor last wrote: a value that differs came from elsewhere (a template copied in).
  const written = useRef(value);
  const editor = useEditor({
    extensions: EMAIL_EXTENSIONS,
    content: value,
    injectNonce: styleNonce,
    editorProps: {
      attributes: {
        class: 'herald-email-editor',
        role: 'textbox',
        'aria-multiline': 'true',
        'aria-labelledby': labelId,
        ...(errorId ? { 'aria-describedby': errorId } : {}),
        ...(invalid ? { 'aria-invalid': 'true' } : {}),
      },
    },
    onUpdate: ({ editor: e }) => {
      written.current = e.isEmpty ? '' : liquidSafe(e.getHTML());
      onChange(written.current);
    },
  });
  useEffect(() => {
    if (!editor || value === written.current) return;
    written.current = value;
    editor.commands.setContent(value, { emitUpdate: false });
  }, [editor, value]);

  if (!editor) return null;
  return (
    <Stack gap={0} className="herald-email-editor-frame" data-invalid={invalid || undefined}>
      <Toolbar editor={editor} label={label} />
      <EditorContent editor={editor} />
      <Text size="xs" c="dimmed" px="sm" pb="xs">
        Liquid works in the text: a variable, or {'{% if %}'} … {'{% endif %}'} inside a paragraph. To wrap whole paragraphs in a Liquid tag, write them in Source.
      </Text>
    </Stack>
  );
}

/** The formatting of the selection, read on every change of the editor's state. */
function useMarks(editor: Editor) {
  return useEditorState({
    editor,
    selector: ({ editor: e }) => ({
      bold: e.isActive('bold'),
      italic: e.isActive('italic'),
      h2: e.isActive('heading', { level: 2 }),
      h3: e.isActive('heading', { level: 3 }),
      bullets: e.isActive('bulletList'),
      numbers: e.isActive('orderedList'),
      link: e.isActive('link'),
      href: (e.getAttributes('link').href as string | undefined) ?? '',
      canUndo: e.can().undo(),
      canRedo: e.can().redo(),
    }),
  });
}

function Toolbar({ editor, label }: { editor: Editor; label: string }) {
  const marks = useMarks(editor);
  const chain = () => editor.chain().focus();
  const tool = (name: string, icon: ReactNode, run: () => void, active?: boolean, disabled?: boolean) => (
    <Tooltip label={name} key={name}>
      <ActionIcon variant={active ? 'filled' : 'default'} size="md" aria-label={name} aria-pressed={active === undefined ? undefined : active} disabled={disabled} onClick={run}>
        {icon}
      </ActionIcon>
    </Tooltip>
  );
  return (
    <Group gap={4} p={6} className="herald-email-toolbar" role="toolbar" aria-label={`${label} formatting`}>
      {tool('Bold', <b>B</b>, () => chain().toggleBold().run(), marks.bold)}
      {tool('Italic', <i style={{ fontFamily: 'serif' }}>I</i>, () => chain().toggleItalic().run(), marks.italic)}
      {tool('Heading H2', <span>H2</span>, () => chain().toggleHeading({ level: 2 }).run(), marks.h2)}
      {tool('Heading H3', <span>H3</span>, () => chain().toggleHeading({ level: 3 }).run(), marks.h3)}
      {tool('Bulleted list', <ListIcon />, () => chain().toggleBulletList().run(), marks.bullets)}
      {tool('Numbered list', <NumberedIcon />, () => chain().toggleOrderedList().run(), marks.numbers)}
      <LinkTool editor={editor} active={marks.link} href={marks.href} />
      {tool('Undo', <UndoIcon />, () => chain().undo().run(), undefined, !marks.canUndo)}
      {tool('Redo', <UndoIcon flip />, () => chain().redo().run(), undefined, !marks.canRedo)}
      <VariableMenu target={label} onInsert={(text) => chain().insertContent(text).run()} />
    </Group>
  );
}

/** A link on the selection: its address asked in a small form (`{{ unsubscribe_url }}` is one too). */
function LinkTool({ editor, active, href }: { editor: Editor; active: boolean; href: string }) {
  const [opened, setOpened] = useState(false);
  const [address, setAddress] = useState('');
  const apply = () => {
    const chain = editor.chain().focus().extendMarkRange('link');
    (address.trim() ? chain.setLink({ href: address.trim() }) : chain.unsetLink()).run();
    setOpened(false);
  };
  return (
    <Popover
      opened={opened}
      onChange={setOpened}
      onOpen={() => setAddress(href)}
      position="bottom-start"
      trapFocus
      withinPortal
    >
      <Popover.Target>
        <ActionIcon variant={active ? 'filled' : 'default'} size="md" aria-label="Link" aria-pressed={active} onClick={() => setOpened((o) => !o)}>
          <LinkIcon />
        </ActionIcon>
      </Popover.Target>
      <Popover.Dropdown>
        <form
          onSubmit={(e) => {
            e.preventDefault();
            e.stopPropagation();
            apply();
          }}
        >
          <Stack gap="xs">
            <TextInput label="Link address" placeholder="https://… or {{ unsubscribe_url }}" value={address} onChange={(e) => setAddress(e.currentTarget.value)} data-autofocus />
            <Group gap="xs">
              <Button size="xs" type="submit">
                {address.trim() ? 'Set link' : 'Remove link'}
              </Button>
            </Group>
          </Stack>
        </form>
      </Popover.Dropdown>
    </Popover>
  );
}

const ICON = { width: 16, height: 16, viewBox: '0 0 24 24', fill: 'none', stroke: 'currentColor', strokeWidth: 2, strokeLinecap: 'round', strokeLinejoin: 'round', 'aria-hidden': true } as const;

function ListIcon() {
  return (
    <svg {...ICON}>
      <path d="M9 6h11M9 12h11M9 18h11" />
      <circle cx="4.5" cy="6" r="1" />
      <circle cx="4.5" cy="12" r="1" />
      <circle cx="4.5" cy="18" r="1" />
    </svg>
  );
}

function NumberedIcon() {
  return (
    <svg {...ICON}>
      <path d="M10 6h10M10 12h10M10 18h10M4 4h1v4M4 8h2M4 14.5a1.5 1.5 0 0 1 3 0c0 1.5-3 2-3 3.5h3" />
    </svg>
  );
}

function LinkIcon() {
  return (
    <svg {...ICON}>
      <path d="M10 14a4 4 0 0 0 5.66 0l3-3a4 4 0 0 0-5.66-5.66l-1 1M14 10a4 4 0 0 0-5.66 0l-3 3a4 4 0 0 0 5.66 5.66l1-1" />
    </svg>
  );
}

function UndoIcon({ flip = false }: { flip?: boolean }) {
  return (
    <svg {...ICON} style={flip ? { transform: 'scaleX(-1)' } : undefined}>
      <path d="M9 14 4 9l5-5M4 9h10a6 6 0 0 1 0 12h-3" />
    </svg>
  );
}
