import { describe, expect, test } from "bun:test";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CredentialsError, parseIni, resolveS3Credentials } from "./s3-credentials.ts";

const file = (text: string) => {
  const path = join(mkdtempSync(join(tmpdir(), "ura-creds-")), "credentials");
  writeFileSync(path, text);
  return path;
};

describe("S3 credentials", () => {
  test("the environment wins over the credentials file", () => {
    const path = file("[default]\naws_access_key_id = FROMFILE\naws_secret_access_key = filesecret\n");
    expect(
      resolveS3Credentials(
        { credentials_file: path },
        { AWS_ACCESS_KEY_ID: "ENV", AWS_SECRET_ACCESS_KEY: "envsecret" },
      ),
    ).toEqual({ accessKeyId: "ENV", secretAccessKey: "envsecret" });
  });

  test("a profile of the shared-credentials file, session token included", () => {
    const path = file(
      "# lab\n[default]\naws_access_key_id=A\naws_secret_access_key=B\n\n[profile robot]\naws_access_key_id = R\naws_secret_access_key = S\naws_session_token = T\n",
    );
    expect(resolveS3Credentials({}, { AWS_SHARED_CREDENTIALS_FILE: path, AWS_PROFILE: "robot" })).toEqual({
      accessKeyId: "R",
      secretAccessKey: "S",
      sessionToken: "T",
    });
    expect(resolveS3Credentials({ credentials_file: path }, {}).accessKeyId).toBe("A");
  });

  test("half a key pair, no source at all, or a profile without keys is refused by name", () => {
    expect(() => resolveS3Credentials({}, { AWS_ACCESS_KEY_ID: "A" })).toThrow(/both AWS_ACCESS_KEY_ID/);
    expect(() => resolveS3Credentials({}, {})).toThrow(CredentialsError);
    const path = file("[default]\naws_access_key_id=A\n");
    expect(() => resolveS3Credentials({ credentials_file: path }, {})).toThrow(/profile \[default\] lacks/);
    expect(() => resolveS3Credentials({ credentials_file: "/nonexistent/creds" }, {})).toThrow(/cannot read/);
  });

  test("INI sections and comments", () => {
    const sections = parseIni("; c\n[a]\nk = v = w\n[ profile b ]\nK=1\n");
    expect(sections.get("a")?.get("k")).toBe("v = w");
    expect(sections.get("b")?.get("k")).toBe("1");
  });
});
