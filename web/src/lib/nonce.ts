/**
 * The nonce Herald put in this response's page (see src/http/console.ts): every `<style>` the
 * console's libraries add at run time must carry it, as the Content-Security-Policy allows no other
 * inline style. Mantine takes it through `getStyleNonce`; react-remove-scroll (under Mantine's
 * modals) reads the `__webpack_nonce__` global, set here before any of them loads.
 */
export const styleNonce = document.querySelector<HTMLMetaElement>('meta[property="csp-nonce"]')?.nonce ?? '';

(globalThis as { __webpack_nonce__?: string }).__webpack_nonce__ = styleNonce;
