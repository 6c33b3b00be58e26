// Client keys: the token's hash, or the client address with IPv6 grouped by subnet.
import { createHash } from 'node:crypto';
import { ipKey, tokenKey } from '../lib/contract/keys';

describe('ipKey', () => {
  it.each([
    { ip: '203.0.113.7', subnet: 64, key: 'ip:203.0.113.7' },
    { ip: '::ffff:203.0.113.7', subnet: 64, key: 'ip:203.0.113.7' },
    { ip: '2001:db8:1:2:3:4:5:6', subnet: 64, key: 'ip:2001:db8:1:2::/64' },
    { ip: '2001:DB8:1:2::ffff', subnet: 64, key: 'ip:2001:db8:1:2::/64' },
    { ip: '2001:db8:1:2:3:4:5:6', subnet: 56, key: 'ip:2001:db8:1::/56' },
    { ip: '2001:db8:1:2:3:4:5:6', subnet: 128, key: 'ip:2001:db8:1:2:3:4:5:6' },
    { ip: '2001:db8:1:2:3:4:5:6', subnet: false, key: 'ip:2001:db8:1:2:3:4:5:6' },
    { ip: 'fe80::1%eth0', subnet: 64, key: 'ip:fe80::/64' },
    { ip: '::1', subnet: 64, key: 'ip:::/64' },
    { ip: undefined, subnet: 64, key: 'ip:unknown' },
    { ip: '', subnet: 64, key: 'ip:unknown' },
    { ip: 'not:an:address', subnet: 64, key: 'ip:not:an:address' },
  ] as const)('$ip /$subnet → $key', ({ ip, subnet, key }) => {
    expect(ipKey(ip, subnet)).toBe(key);
  });
});

describe('tokenKey', () => {
  it('is the SHA-256 of the whole value, never the value itself', () => {
    const token = 'Bot secret-token-123';
    const key = tokenKey(token);
    expect(key).toBe(`t:${createHash('sha256').update(token).digest('base64url')}`);
    expect(key).not.toContain('secret');
    expect(tokenKey('Bot secret-token-124')).not.toBe(key);
  });
});
