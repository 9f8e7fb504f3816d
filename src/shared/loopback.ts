/**
 * Names of this machine's loopback interface: "localhost" and its subdomains (RFC 6761), 127.0.0.0/8
 * and ::1. Binding anything else exposes the user's upstream key and data to the network; a request
 * naming anything else did not come from a client that dialled loopback by name.
 */
export function isLoopbackHost(host: string): boolean {
  const name = host.toLowerCase().replace(/\.$/, '');
  return name === 'localhost' || name.endsWith('.localhost') || name === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(name);
}
