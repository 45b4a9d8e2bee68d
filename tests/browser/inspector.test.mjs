// The world inspector in a real browser: starts the arena with --inspect, opens the page in
// headless Chromium (playwright-core, Debian's /usr/bin/chromium), filters the entity list,
// opens a unit, edits a field in the page and checks through the JSON API that the world
// changed; visits the archetype and system views; saves screenshots.
//
//   node inspector.test.mjs <arena binary> <output dir>
//
// Exit status: 0 passed, 1 failed, 77 skipped (no Chromium or no `npm ci` here: ctest reports
// it as skipped, never as passed).
import { spawn } from "node:child_process";
import { existsSync, mkdirSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";

const SKIP = 77;
const here = path.dirname(fileURLToPath(import.meta.url));
const [arenaPath, outDir = "."] = process.argv.slice(2);
const chromiumPath = process.env.CHROMIUM || "/usr/bin/chromium";

if (!arenaPath) {
  console.error("usage: node inspector.test.mjs <arena binary> <output dir>");
  process.exit(2);
}
if (!existsSync(chromiumPath)) {
  console.log(`SKIP: no Chromium at ${chromiumPath} (make browser-deps installs it)`);
  process.exit(SKIP);
}
let chromium;
try {
  chromium = createRequire(path.join(here, "package.json"))("playwright-core").chromium;
} catch (e) {
  console.log(`SKIP: playwright-core is not installed in ${here} (run npm ci there, or make browser-deps)`);
  process.exit(SKIP);
}
mkdirSync(outDir, { recursive: true });

function check(condition, message) {
  if (!condition) throw new Error("check failed: " + message);
}

/// Starts the arena and resolves with its inspector's URL (from the line it prints).
function startArena() {
  const child = spawn(arenaPath, ["--units", "400", "--frames", "1000000", "--workers", "2",
                                  "--inspect", "0"], { stdio: ["ignore", "pipe", "inherit"] });
  const url = new Promise((resolve, reject) => {
    let out = "";
    const timer = setTimeout(() => reject(new Error("the arena printed no inspector URL in 60 s")), 60000);
    child.stdout.on("data", (chunk) => {
      out += chunk;
      const m = out.match(/inspector: (http:\/\/\S+)/);
      if (m) { clearTimeout(timer); resolve(m[1]); }
    });
    child.on("exit", (code) => reject(new Error(`the arena exited (status ${code}) before serving`)));
  });
  return { child, url };
}

async function api(base, p, options) {
  const r = await fetch(new URL(p, base), options);
  return { status: r.status, body: await r.json() };
}

async function main() {
  const { child, url: urlPromise } = startArena();
  let browser;
  try {
    const base = await urlPromise;
    console.log("arena inspector at", base);
    browser = await chromium.launch({ executablePath: chromiumPath, headless: true,
                                      args: ["--no-sandbox", "--disable-gpu"] });
    const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
    const pageErrors = [];
    page.on("pageerror", (e) => pageErrors.push(String(e)));
    await page.goto(base);

    // Live stats: the frame counter moves.
    await page.waitForFunction(() => Number(document.getElementById("s-frame").textContent) > 0);
    const f0 = Number(await page.textContent("#s-frame"));
    await page.waitForFunction((f) => Number(document.getElementById("s-frame").textContent) > f, f0,
                               { timeout: 10000 });

    // Filter: units (with Unit), without the weapons' components.
    await page.fill("#with", "arena::Unit");
    await page.fill("#without", "arena::Weapon");
    await page.click("#apply");
    await page.waitForFunction(() => {
      const items = document.querySelectorAll("#entity-list li");
      return items.length > 0 && [...items].every((li) => li.textContent.includes("Unit"));
    });
    const listed = await page.$$eval("#entity-list li", (items) => items.map((li) => li.dataset.id));
    const filtered = await api(base, "/api/entities?with=arena::Unit&without=arena::Weapon&limit=1000");
    check(filtered.status === 200, "the filtered list loads");
    const units = new Set(filtered.body.entities.map((e) => e.id));
    const known = listed.filter((id) => units.has(id)).length;
    check(known >= listed.length / 2, `the page lists units (${known} of ${listed.length} still listed by the API)`);

    // Open a unit, edit Unit.speed in the page, check the world through the API. Units can
    // die meanwhile: then try the next one.
    let edited = null;
    for (const id of listed.slice(0, 10)) {
      await page.click(`#entity-list li[data-id="${id}"]`);
      const input = `#detail input[data-component="arena::Unit"][data-path="speed"]`;
      try {
        await page.waitForSelector(input, { timeout: 5000 });
      } catch (e) { continue; }
      const value = 7.25;
      await page.fill(input, String(value));
      await page.press(input, "Enter");
      try {
        await page.waitForSelector(`${input}.saved`, { timeout: 5000 });
      } catch (e) { continue; }
      const r = await api(base, "/api/entity/" + id);
      if (r.status === 404) continue;  // died right after the edit
      const unit = r.body.components.find((c) => c.name === "arena::Unit");
      const speed = unit.fields.find((f) => f.path === "speed").value;
      check(speed === value, `Unit.speed of ${id} is ${speed} in the world, expected ${value}`);
      edited = id;
      break;
    }
    check(edited !== null, "an entity was edited through the page");
    console.log("edited arena::Unit.speed of", edited, "through the page");
    await page.screenshot({ path: path.join(outDir, "inspector-entities.png") });

    // A bad edit shows an error and changes nothing.
    const hp = `#detail input[data-component="arena::Health"][data-path="hp"]`;
    if (await page.$(hp)) {
      await page.fill(hp, "1.5");  // not an integer
      await page.press(hp, "Enter");
      // The message, not the input's class: a live refresh may redraw the input meanwhile.
      await page.waitForFunction(() => (document.querySelector("#msg")?.textContent ?? "").includes("can't take"),
                                 null, { timeout: 5000 });
    }

    // Archetypes: a table row per archetype, with the unit table among them.
    await page.click('nav button[data-tab="archetypes"]');
    await page.waitForFunction(() => document.querySelectorAll("#archetype-rows tr").length > 1);
    check((await page.textContent("#archetype-rows")).includes("Unit"), "the archetype table names components");
    await page.screenshot({ path: path.join(outDir, "inspector-archetypes.png") });

    // Systems: one row per system with a bar, times filled in.
    await page.click('nav button[data-tab="systems"]');
    await page.waitForFunction(() => document.querySelectorAll("#system-rows tr[data-system] .bar").length >= 5);
    const systems = await page.$$eval("#system-rows tr[data-system]", (rows) => rows.map((r) => r.dataset.system));
    check(systems.includes("move") && systems.includes("attack"), "the systems view lists the arena's systems: " + systems);
    await page.waitForTimeout(1500);  // one live refresh
    await page.screenshot({ path: path.join(outDir, "inspector-systems.png") });

    check(pageErrors.length === 0, "no JavaScript errors: " + pageErrors.join("; "));
    console.log("PASS: filtered, opened, edited through the page; archetypes and systems shown");
  } finally {
    if (browser) await browser.close();
    child.kill("SIGTERM");
  }
}

main().then(() => process.exit(0), (e) => {
  console.error("FAIL:", e.message);
  process.exit(1);
});
