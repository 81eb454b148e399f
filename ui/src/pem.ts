// TLS files of a connection form: the CA certificate, the client certificate and the client key
// are each a file path on the server or the PEM text itself. An upload reads a local file in the
// browser and puts its text in the field; the API keeps an inline key in its secrets store and
// returns STORED_KEY in its place (docs/api.md).

// What the API returns for (and accepts back as "keep") an inline client key it has stored.
export const STORED_KEY = '<stored key>'
// The API's limit for one ssl value (src/api/connections.cc, kMaxSslValue).
export const MAX_PEM_BYTES = 16384

export const isInlinePem = (v: string) => v.includes('-----BEGIN')

export interface PemUpload { text: string; name: string; bytes: number }

// Reads an uploaded .pem/.crt/.key file; throws an Error that says why the file is not usable
// (too large for the API, binary, or not PEM: DER files must be converted first).
export async function readPemFile(file: Blob & { name: string }): Promise<PemUpload> {
  if (file.size > MAX_PEM_BYTES) {
    throw new Error(`${file.name} is ${file.size} bytes: the API takes at most ${MAX_PEM_BYTES}`)
  }
  const text = await file.text()
  if (text.includes('\0') || !isInlinePem(text)) {
    throw new Error(`${file.name} is not a PEM file (no "-----BEGIN" line; convert DER with openssl first)`)
  }
  return { text, name: file.name, bytes: new TextEncoder().encode(text).length }
}

// What a field shows instead of raw PEM text: the uploaded file, PEM text loaded from a saved
// connection, or the marker of a stored key. null when the value is a path (shown as it is).
export function describePem(value: string, upload?: PemUpload | null): string | null {
  if (upload && value === upload.text) return `uploaded: ${upload.name}, ${upload.bytes} bytes`
  if (value === STORED_KEY) return 'stored key (kept unless you upload another)'
  if (isInlinePem(value)) return `inline PEM, ${new TextEncoder().encode(value).length} bytes`
  return null
}
