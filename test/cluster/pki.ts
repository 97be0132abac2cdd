/** The control plane's certificates and keys, made fresh per run with openssl (a test oracle tool)
 * and node:crypto: a CA, the apiserver's serving certificate, client certificates for the admin
 * and the controller manager, and the ServiceAccount token signing key pair. Valid for one day. */
import { execFileSync } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

export interface ClientCert {
  cert: string;
  key: string;
}

export interface Pki {
  dir: string;
  caCert: string;
  caKey: string;
  servingCert: string;
  servingKey: string;
  admin: ClientCert;
  controllerManager: ClientCert;
  serviceAccountKey: string;
  serviceAccountPub: string;
}

function openssl(dir: string, args: string[]): void {
  try {
    execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
  } catch (err) {
    const stderr = String((err as { stderr?: Buffer }).stderr ?? err);
    throw new Error(`openssl ${args[0]}: ${stderr.trim()}`);
  }
}

/** A certificate signed by the CA for `subject`, with the given extensions (openssl syntax). */
function issue(dir: string, name: string, subject: string, extensions: string[]): ClientCert {
  const key = join(dir, `${name}.key`);
  const cert = join(dir, `${name}.crt`);
  const ext = join(dir, `${name}.ext`);
  writeFileSync(ext, `${extensions.join('\n')}\n`);
  openssl(dir, ['req', '-new', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', key, '-out', `${name}.csr`, '-subj', subject]);
  openssl(dir, ['x509', '-req', '-in', `${name}.csr`, '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial', '-days', '1', '-out', cert, '-extfile', ext]);
  return { cert, key };
}

const CLIENT = ['basicConstraints=CA:FALSE', 'keyUsage=critical,digitalSignature', 'extendedKeyUsage=clientAuth'];

export function makePki(dir: string, serverNames: { dns: string[]; ips: string[] }): Pki {
  openssl(dir, ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', 'ca.key', '-out', 'ca.crt',
    '-subj', '/CN=nfkube-test-ca', '-days', '1', '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign']);
  const san = [...serverNames.dns.map((d) => `DNS:${d}`), ...serverNames.ips.map((ip) => `IP:${ip}`)].join(',');
  const serving = issue(dir, 'apiserver', '/CN=kube-apiserver', ['basicConstraints=CA:FALSE', 'keyUsage=critical,digitalSignature', 'extendedKeyUsage=serverAuth', `subjectAltName=${san}`]);
  const admin = issue(dir, 'admin', '/O=system:masters/CN=nfkube-test-admin', CLIENT);
  const controllerManager = issue(dir, 'controller-manager', '/CN=system:kube-controller-manager', CLIENT);
  const sa = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  const serviceAccountKey = join(dir, 'sa.key');
  const serviceAccountPub = join(dir, 'sa.pub');
  writeFileSync(serviceAccountKey, sa.privateKey.export({ type: 'pkcs8', format: 'pem' }));
  writeFileSync(serviceAccountPub, sa.publicKey.export({ type: 'spki', format: 'pem' }));
  return {
    dir,
    caCert: join(dir, 'ca.crt'),
    caKey: join(dir, 'ca.key'),
    servingCert: serving.cert,
    servingKey: serving.key,
    admin,
    controllerManager,
    serviceAccountKey,
    serviceAccountPub,
  };
}
