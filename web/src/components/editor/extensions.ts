import StarterKit from '@tiptap/starter-kit';

/**
 * What an email's rich text is made of: paragraphs, headings, lists, links, bold and italic, with
 * undo. Nothing the editor would add by itself: no empty paragraph after the last block, and a link
 * is written with its address alone (no `target` or `rel` of the editor's own).
 */
export const EMAIL_EXTENSIONS = [
  StarterKit.configure({
    heading: { levels: [1, 2, 3] },
    trailingNode: false,
    link: { openOnClick: false, autolink: true, HTMLAttributes: { target: null, rel: null, class: null } },
  }),
];
