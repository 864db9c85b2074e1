/**
 * The Kubernetes example (deploy/kubernetes/) checked without a cluster:
 *  - every object against the Kubernetes OpenAPI schema as compiled by the npm package
 *    `kubernetes-models` (types, required fields, enums), and field names strictly
 *    against the OpenAPI models of `@kubernetes/client-node` (the API server's strict
 *    field validation: an unknown or misspelt field is an error, which the OpenAPI
 *    schema alone lets through);
 *  - what the example promises: a native sidecar (init container, restartPolicy Always)
 *    gated by a startupProbe on /health/ready, readiness/liveness on the health
 *    endpoints, a grace period longer than the drain deadline, secrets from the Secret
 *    as environment variables, records on the volume claim at the configured data_dir,
 *    scrape annotations on the container port, the pod's share of the provider key's
 *    quota in upstream.budget, and a config.json the compiled binary accepts
 *    (`serve --validate-config`).
 * The base is also rendered with `kubectl kustomize` (kubectl ships in the machine
 * image) and what it renders validated the same way.
 * What needs a cluster (scheduling, the kubelet's sidecar ordering, probes passing,
 * PVC binding) is not checked here.
 */
import { describe, expect, test } from "bun:test";
import { mkdtempSync, readdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import * as k8s from "@kubernetes/client-node";
import { StatefulSet } from "kubernetes-models/apps/v1/StatefulSet";
import { ConfigMap } from "kubernetes-models/v1/ConfigMap";
import { Secret } from "kubernetes-models/v1/Secret";
import { Service } from "kubernetes-models/v1/Service";
import { binaryPath } from "../support/sidecar-process.ts";

const dir = resolve(import.meta.dir, "../../deploy/kubernetes");
// biome-ignore lint/suspicious/noExplicitAny: manifests are walked by path here; the two validators check their shape
type Manifest = Record<string, any>;

const kustomization = Bun.YAML.parse(await Bun.file(join(dir, "kustomization.yaml")).text()) as {
  resources: string[];
};
const manifests: Manifest[] = [];
for (const file of kustomization.resources) {
  const parsed = Bun.YAML.parse(await Bun.file(join(dir, file)).text());
  manifests.push(...(Array.isArray(parsed) ? parsed : [parsed]));
}
const byKind = (kind: string) => manifests.find((m) => m.kind === kind) as Manifest;

const schemaModels: Record<string, new (data: Manifest) => { validate(): void }> = {
  "v1/Secret": Secret,
  "v1/ConfigMap": ConfigMap,
  "v1/Service": Service,
  "apps/v1/StatefulSet": StatefulSet,
};

type Attribute = { baseName: string; type: string };
const models = k8s as unknown as Record<string, { getAttributeTypeMap?: () => Attribute[] }>;

/** Paths of fields the OpenAPI models do not define (what `kubectl apply` refuses under strict field validation). */
function unknownFields(value: unknown, type: string, path: string, found: string[] = []): string[] {
  if (value === null || value === undefined) return found;
  const item = /^Array<(.+)>$/.exec(type)?.[1];
  if (item) {
    if (Array.isArray(value))
      for (const [i, v] of value.entries()) unknownFields(v, item, `${path}[${i}]`, found);
    return found;
  }
  const mapValue = /^\{ \[key: string\]: (.+); \}$/.exec(type)?.[1];
  if (mapValue) {
    for (const [key, v] of Object.entries(value as object))
      unknownFields(v, mapValue, `${path}.${key}`, found);
    return found;
  }
  const attributes = models[type]?.getAttributeTypeMap?.();
  if (!attributes || typeof value !== "object" || Array.isArray(value)) return found;
  for (const [key, v] of Object.entries(value)) {
    const attribute = attributes.find((a) => a.baseName === key);
    if (!attribute) found.push(`${path}.${key}`);
    else unknownFields(v, attribute.type, `${path}.${key}`, found);
  }
  return found;
}

function validate(manifest: Manifest): string[] {
  const Model = schemaModels[`${manifest.apiVersion}/${manifest.kind}`];
  if (!Model) return [`no schema for ${manifest.apiVersion} ${manifest.kind}`];
  const problems = unknownFields(manifest, `V1${manifest.kind}`, manifest.kind).map(
    (p) => `unknown field ${p}`,
  );
  try {
    new Model(manifest).validate();
  } catch (error) {
    problems.push((error as Error).message);
  }
  return problems;
}

const statefulSet = byKind("StatefulSet");
const pod = statefulSet.spec.template.spec;
const sidecar = pod.initContainers.find((c: Manifest) => c.name === "ura-sidecar");
const config = JSON.parse(byKind("ConfigMap").data["config.json"]);

describe("deploy/kubernetes", () => {
  test("the kustomization lists every manifest of the folder", () => {
    const yamlFiles = readdirSync(dir).filter((f) => f.endsWith(".yaml") && f !== "kustomization.yaml");
    expect([...kustomization.resources].sort()).toEqual(yamlFiles.sort());
  });

  test("every object validates against the Kubernetes OpenAPI schema, with no unknown field", () => {
    expect(manifests.map((m) => m.kind).sort()).toEqual(["ConfigMap", "Secret", "Service", "StatefulSet"]);
    for (const manifest of manifests)
      expect({ kind: manifest.kind, problems: validate(manifest) }).toEqual({
        kind: manifest.kind,
        problems: [],
      });
  });

  test("the validation fails on a wrong type and on a misspelt field", () => {
    const wrongType = structuredClone(statefulSet);
    wrongType.spec.template.spec.initContainers[0].ports[0].containerPort = "8787";
    expect(validate(wrongType).join("\n")).toContain("containerPort must be integer");
    const misspelt = structuredClone(statefulSet);
    misspelt.spec.template.spec.initContainers[0].restartPolicyy = "Always";
    misspelt.spec.template.spec.initContainers[0].startupProbe.httpGet.paht = "/health/ready";
    misspelt.spec.volumeClaimTemplates[0].spec.accesModes = ["ReadWriteOnce"];
    expect(validate(misspelt).sort()).toEqual([
      "unknown field StatefulSet.spec.template.spec.initContainers[0].restartPolicyy",
      "unknown field StatefulSet.spec.template.spec.initContainers[0].startupProbe.httpGet.paht",
      "unknown field StatefulSet.spec.volumeClaimTemplates[0].spec.accesModes",
    ]);
  });

  test("ura-sidecar is a native sidecar, gated and watched on the health endpoints", () => {
    expect(sidecar.restartPolicy).toBe("Always");
    expect(pod.containers.map((c: Manifest) => c.name)).toEqual(["agent"]);
    const port = sidecar.ports.find((p: Manifest) => p.name === "http").containerPort;
    expect(config.listen).toBe(`0.0.0.0:${port}`);
    expect(sidecar.startupProbe.httpGet).toEqual({ path: "/health/ready", port: "http" });
    expect(sidecar.readinessProbe.httpGet).toEqual({ path: "/health/ready", port: "http" });
    expect(sidecar.livenessProbe.httpGet).toEqual({ path: "/health/live", port: "http" });
    for (const annotations of [
      statefulSet.spec.template.metadata.annotations,
      byKind("Service").metadata.annotations,
    ]) {
      expect(annotations).toEqual({
        "prometheus.io/scrape": "true",
        "prometheus.io/port": String(port),
        "prometheus.io/path": "/metrics",
      });
    }
  });

  test("the grace period outlasts the agent's stop plus the sidecar's drain deadline", () => {
    // The sidecar's SIGTERM comes only after the agent exited: both must fit in the grace period.
    const drainSeconds = config.shutdown.drain_deadline_ms / 1000;
    expect(pod.terminationGracePeriodSeconds).toBeGreaterThanOrEqual(drainSeconds + 30);
  });

  test("secrets come from the Secret as environment variables; records live on the volume claim", () => {
    const secret = byKind("Secret");
    expect(sidecar.envFrom).toEqual([{ secretRef: { name: secret.metadata.name } }]);
    expect(Object.keys(secret.stringData).sort()).toEqual([
      "AWS_ACCESS_KEY_ID",
      "AWS_SECRET_ACCESS_KEY",
      "URA_CONTROL_PASSWORD",
      "URA_UPSTREAM_API_KEY",
    ]);
    expect(JSON.stringify(sidecar.args)).not.toMatch(/KEY|PASSWORD|SECRET/);
    const agentEnv = pod.containers[0].env.find((e: Manifest) => e.name === "URA_CONTROL_PASSWORD");
    expect(agentEnv.valueFrom.secretKeyRef).toEqual({
      name: secret.metadata.name,
      key: "URA_CONTROL_PASSWORD",
    });
    const claim = statefulSet.spec.volumeClaimTemplates[0].metadata.name;
    expect(sidecar.volumeMounts).toContainEqual({ name: claim, mountPath: config.data_dir });
    expect(pod.securityContext.runAsNonRoot).toBe(true);
  });

  test("kustomize (kubectl's) renders the base; what it renders validates too, image tag and labels applied", async () => {
    const proc = Bun.spawn(["kubectl", "kustomize", dir], { stdout: "pipe", stderr: "pipe" });
    const [out, err, code] = [
      await new Response(proc.stdout).text(),
      await new Response(proc.stderr).text(),
      await proc.exited,
    ];
    expect({ code, err }).toEqual({ code: 0, err: "" });
    const rendered = Bun.YAML.parse(out) as Manifest[];
    expect(rendered.map((m) => m.kind).sort()).toEqual(["ConfigMap", "Secret", "Service", "StatefulSet"]);
    for (const manifest of rendered) {
      expect({ kind: manifest.kind, problems: validate(manifest) }).toEqual({
        kind: manifest.kind,
        problems: [],
      });
      expect(manifest.metadata.labels["app.kubernetes.io/part-of"]).toBe("ura-fleet");
    }
    const renderedPod = rendered.find((m) => m.kind === "StatefulSet")?.spec.template.spec;
    // The tag of the image `make image` builds: the package version.
    const { version } = JSON.parse(await Bun.file(join(dir, "../../package.json")).text());
    expect(renderedPod.initContainers[0].image).toBe(`ura-sidecar:${version}`);
  });

  test("each pod's config carries its share of the provider key's quota (docs/fleet.md)", () => {
    const budget = config.upstream.budget;
    expect(budget.requests_per_minute).toBeGreaterThan(0);
    expect(budget.tokens_per_minute).toBeGreaterThan(0);
    expect(budget.max_concurrent).toBeGreaterThanOrEqual(1);
  });

  test("config.json is accepted by the compiled binary", async () => {
    const path = join(mkdtempSync(join(tmpdir(), "ura-k8s-")), "config.json");
    writeFileSync(path, byKind("ConfigMap").data["config.json"]);
    const proc = Bun.spawn([binaryPath, "serve", "--config", path, "--validate-config"], {
      env: { PATH: process.env.PATH ?? "/usr/bin:/bin" },
      stdout: "pipe",
      stderr: "pipe",
    });
    const [out, err, code] = [
      await new Response(proc.stdout).text(),
      await new Response(proc.stderr).text(),
      await proc.exited,
    ];
    expect({ code, out: out.trim(), err }).toEqual({ code: 0, out: "configuration is valid", err: "" });
  });
});
