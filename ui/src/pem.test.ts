import { describe, expect, it } from 'vitest'
import { MAX_PEM_BYTES, STORED_KEY, describePem, isInlinePem, readPemFile } from './pem'

const pem = '-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIU\n-----END CERTIFICATE-----\n'
const file = (text: string | Uint8Array<ArrayBuffer>, name: string) => new File([text], name)

describe('pem', () => {
  it('reads a PEM file with its name and size', async () => {
    const u = await readPemFile(file(pem, 'ca.pem'))
    expect(u).toEqual({ text: pem, name: 'ca.pem', bytes: pem.length })
    expect(describePem(u.text, u)).toBe(`uploaded: ca.pem, ${pem.length} bytes`)
  })
  it('counts bytes, not characters', async () => {
    const text = pem.replace('MIIB', 'MIIB é')
    const u = await readPemFile(file(text, 'é.crt'))
    expect(u.bytes).toBe(text.length + 1)
  })
  it('refuses what the API or the drivers would not take', async () => {
    await expect(readPemFile(file('x'.repeat(MAX_PEM_BYTES + 1), 'big.pem'))).rejects.toThrow(/big\.pem is 16385 bytes/)
    await expect(readPemFile(file(new Uint8Array([0x30, 0x82, 0x01, 0x00]), 'ca.der'))).rejects.toThrow(/not a PEM file/)
    await expect(readPemFile(file('/etc/ssl/ca.pem', 'path.txt'))).rejects.toThrow(/not a PEM file/)
  })
  it('describes a value instead of showing PEM text; a path is shown as it is', () => {
    expect(describePem('/etc/ssl/ca.pem')).toBeNull()
    expect(describePem('')).toBeNull()
    expect(describePem(STORED_KEY)).toMatch(/^stored key/)
    expect(describePem(pem)).toBe(`inline PEM, ${pem.length} bytes`)
    // An upload replaced by typing shows the new value, not the old file.
    expect(describePem(pem, { text: 'other', name: 'a.pem', bytes: 5 })).toBe(`inline PEM, ${pem.length} bytes`)
    expect(isInlinePem(pem)).toBe(true)
    expect(isInlinePem(STORED_KEY)).toBe(false)
  })
})
