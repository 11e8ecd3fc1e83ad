// Verify W3C Verifiable Credentials with Digital Bazaar's independent stack, offline.
//
// stdin:  ONE JSON object
//           {"credentials": [VC, ...],
//            "contexts": {IRI: document},          // every JSON-LD context allowed
//            "didDocuments"?: {DID: document},     // extra controller documents
//            "requireIssuerMatch"?: true}          // see `purposeFor` below
// stdout: ONE JSON line
//           {"results": [{"verified": bool, "cryptosuite": str|null,
//                         "error": str|null}, ...]}
// Exit 0 when it ran (whatever the results), non-zero when it crashed.
//
// Nothing is fetched: the document loader holds only the contexts given on stdin,
// the DID documents given on stdin, and the did:key document of each credential's
// own issuer (built here from the did:key with @digitalbazaar/ed25519-multikey).
// Any other URL throws, naming it.
import {readFileSync} from 'node:fs';

import * as vc from '@digitalbazaar/vc';
import * as Ed25519Multikey from '@digitalbazaar/ed25519-multikey';
import {DataIntegrityProof} from '@digitalbazaar/data-integrity';
import {createVerifyCryptosuite as createJcsVerifyCryptosuite} from
  '@digitalbazaar/eddsa-jcs-2022-cryptosuite';
import {cryptosuite as eddsaRdfc2022} from
  '@digitalbazaar/eddsa-rdfc-2022-cryptosuite';
import jsigs from 'jsonld-signatures';

// The jcs package exports factories (its sign and verify variants differ in how
// they treat proof.@context); the rdfc package exports one suite object.
const eddsaJcs2022 = createJcsVerifyCryptosuite();
const CRYPTOSUITES = new Map([
  [eddsaJcs2022.name, eddsaJcs2022],
  [eddsaRdfc2022.name, eddsaRdfc2022]
]);
const DID_CONTEXT_V1 = 'https://www.w3.org/ns/did/v1';
const MULTIKEY_CONTEXT_V1 = 'https://w3id.org/security/multikey/v1';

// did:key v0.9 §3.1: one Multikey verification method, `did:key:X#X`. Built with
// Ed25519Multikey.from, which rejects anything that is not an Ed25519 Multikey.
// The document's first @context is the DID v1 context, so jsonld-signatures'
// ControllerProofPurpose reads `assertionMethod` directly instead of framing the
// document (which would need the DID and Multikey contexts in the loader).
async function didKeyDocument(did) {
  const multibase = did.slice('did:key:'.length);
  if(!/^z[1-9A-HJ-NP-Za-km-z]+$/.test(multibase)) {
    throw new Error(`not a did:key DID: ${did}`);
  }
  const id = `${did}#${multibase}`;
  const key = await Ed25519Multikey.from({
    type: 'Multikey', id, controller: did, publicKeyMultibase: multibase
  });
  const method = await key.export({publicKey: true, includeContext: false});
  return {
    '@context': [DID_CONTEXT_V1, MULTIKEY_CONTEXT_V1],
    id: did,
    verificationMethod: [method],
    authentication: [id],
    assertionMethod: [id],
    capabilityDelegation: [id],
    capabilityInvocation: [id]
  };
}

// URL -> document for one DID document: the DID itself and each of its
// verification methods (by absolute id, or `DID#fragment` for a relative one).
function didEntries(did, document) {
  const entries = [[did, document]];
  for(const method of document.verificationMethod || []) {
    const id = method.id.startsWith('#') ? did + method.id : method.id;
    entries.push([id, {...method, id}]);
  }
  return entries;
}

function issuerId(credential) {
  const issuer = credential.issuer;
  return typeof issuer === 'string' ? issuer : issuer?.id;
}

function makeDocumentLoader(base, extraEntries) {
  const documents = new Map([...base, ...extraEntries]);
  return async function documentLoader(url) {
    if(documents.has(url)) {
      // A deep copy: jsonld.js must never edit what the next credential reads.
      const document = structuredClone(documents.get(url));
      return {contextUrl: null, documentUrl: url, document};
    }
    throw new Error(`offline document loader: refusing unknown URL ${url}`);
  };
}

// The proof purpose. By default vc's CredentialIssuancePurpose: the proof must
// be for `assertionMethod` of its controller AND that controller must be the
// credential's `issuer` — what a relying party checks for tenure's receipts.
// `requireIssuerMatch: false` uses the plain AssertionProofPurpose (the key
// must still be an assertionMethod of its controller, but the issuer may be
// any URL): the W3C vc-di-eddsa vectors name `https://vc.example/issuers/5678`
// as issuer while their key is a did:key.
function purposeFor(requireIssuerMatch) {
  return requireIssuerMatch ? new vc.CredentialIssuancePurpose() :
    new jsigs.purposes.AssertionProofPurpose();
}

// Error objects here nest (jsigs VerificationError.errors, jsonld.js
// details.cause); flatten them so the URL a loader refused is visible.
function describe(error, seen = new Set()) {
  if(error === undefined || error === null) {
    return null;
  }
  if(typeof error !== 'object' || seen.has(error)) {
    return String(error);
  }
  seen.add(error);
  const parts = [`${error.name || 'Error'}: ${error.message}`];
  for(const inner of error.errors || []) {
    parts.push(describe(inner, seen));
  }
  for(const inner of [error.cause, error.details?.cause]) {
    if(inner) {
      parts.push(describe(inner, seen));
    }
  }
  return parts.join(' <- ');
}

function firstError(result) {
  if(result.error) {
    return result.error;
  }
  for(const item of result.results || []) {
    if(item.error) {
      return item.error;
    }
  }
  return new Error('not verified (no error reported)');
}

async function verifyOne(credential, {contextEntries, didEntriesGiven,
  requireIssuerMatch}) {
  const proof = credential?.proof;
  const name = Array.isArray(proof) ? null : proof?.cryptosuite ?? null;
  const outcome = {verified: false, cryptosuite: name, error: null};
  const cryptosuite = CRYPTOSUITES.get(name);
  if(!cryptosuite) {
    outcome.error = `unsupported or missing proof.cryptosuite: ${name}`;
    return outcome;
  }
  // The credential's own issuer, when it is a did:key, is resolvable; a proof
  // made with any other did:key then fails at the loader.
  const entries = [...didEntriesGiven];
  const issuer = issuerId(credential);
  if(typeof issuer === 'string' && issuer.startsWith('did:key:')) {
    try {
      entries.push(...didEntries(issuer, await didKeyDocument(issuer)));
    } catch(error) {
      outcome.error = `issuer: ${describe(error)}`;
      return outcome;
    }
  }
  const result = await vc.verifyCredential({
    credential,
    suite: new DataIntegrityProof({cryptosuite}),
    purpose: purposeFor(requireIssuerMatch),
    documentLoader: makeDocumentLoader(contextEntries, entries),
    // `now` is left to the default (the current time), so `validFrom` /
    // `validUntil` are checked as any verifier would, with vc's default
    // maxClockSkew of 300 s. vc also checks the VC 2.0 data model (dates are
    // XML Schema dateTimes, `issuer` is a URL, ...).
    //
    // No `checkStatus`: tenure's credentials carry no `credentialStatus`, and
    // this verifier cannot resolve one offline, so vc rejects a credential
    // that has one ("A checkStatus function must be given") rather than
    // accepting it unchecked.
  });
  outcome.verified = result.verified === true;
  if(!outcome.verified) {
    outcome.error = describe(firstError(result));
  }
  return outcome;
}

async function main() {
  const input = JSON.parse(readFileSync(0, 'utf8'));
  if(!Array.isArray(input?.credentials)) {
    throw new TypeError('input must be {"credentials": [...], "contexts": {}}');
  }
  const contextEntries = Object.entries(input.contexts ?? {});
  const didEntriesGiven = Object.entries(input.didDocuments ?? {})
    .flatMap(([did, document]) => didEntries(did, document));
  const options = {
    contextEntries, didEntriesGiven,
    requireIssuerMatch: input.requireIssuerMatch !== false
  };
  const results = [];
  for(const credential of input.credentials) {
    results.push(await verifyOne(credential, options));
  }
  process.stdout.write(JSON.stringify({results}) + '\n');
}

main().catch(error => {
  process.stderr.write(`verify.mjs crashed: ${error?.stack || error}\n`);
  process.exit(2);
});
