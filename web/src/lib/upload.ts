/**
 * A file sent to a REST path as `multipart/form-data`: the one place the console speaks REST
 * besides downloads, because a GraphQL request is limited to 15 MB and an upload is not. It goes
 * with the credential of the GraphQL client (the session's JWT), its fields before the file (the
 * server reads them first), and reports how much was sent as it goes. A refusal comes back as a
 * `CombinedError` shaped like a GraphQL one (`statusCode`, `details`), so a form shows it with
 * `ErrorAlert` and `fieldErrors` as it shows any other.
 */
import { CombinedError } from 'urql';
import { getToken, setToken } from './session';

export type UploadResult<T> = { data: T; error?: undefined } | { data?: undefined; error: CombinedError };

interface ErrorBody {
  statusCode?: number;
  message?: string;
  error?: string;
  details?: { field: string; message: string }[];
}

function refusal(status: number, body: ErrorBody | null): CombinedError {
  const message = body?.message ?? `The upload was refused (HTTP ${status}).`;
  return new CombinedError({ graphQLErrors: [{ message, extensions: { statusCode: status, code: body?.error, details: body?.details } }] });
}

/** POSTs `fields` then `file` (as the part `file`) to `path`; `onProgress` gets the share sent, 0 to 1. */
export function uploadFile<T>(path: string, fields: Record<string, string>, file: File, onProgress?: (sent: number) => void): Promise<UploadResult<T>> {
  const form = new FormData();
  for (const [name, value] of Object.entries(fields)) form.append(name, value);
  form.append('file', file, file.name);
  const token = getToken();
  return new Promise((resolve) => {
    // XMLHttpRequest, not fetch: only it reports the progress of a request body.
    const xhr = new XMLHttpRequest();
    xhr.open('POST', path);
    if (token) xhr.setRequestHeader('Authorization', `Bearer ${token}`);
    xhr.responseType = 'json';
    xhr.upload.onprogress = (e) => {
      if (e.lengthComputable) onProgress?.(e.loaded / e.total);
    };
    xhr.onload = () => {
      const body = xhr.response as unknown;
      if (xhr.status >= 200 && xhr.status < 300) return resolve({ data: body as T });
      // A refused session is forgotten, as the GraphQL client does: the user is sent to the login page.
      if (xhr.status === 401 && token) setToken(null);
      resolve({ error: refusal(xhr.status, body as ErrorBody | null) });
    };
    xhr.onerror = () => resolve({ error: new CombinedError({ networkError: new Error('The upload could not reach Herald') }) });
    xhr.send(form);
  });
}
