#!/usr/bin/python3
"""The world inspector in a real browser.

Starts the arena with --inspect, opens the page in headless Chromium (Debian's chromium,
driven through chromium-driver by python3-selenium), filters the entity list, opens a unit,
edits a field in the page and checks through the JSON API that the world changed; opens the map
and checks that it draws the units where the API says they are and that clicking one opens it;
visits the archetype view and the system view, whose charts must fill as frames pass; saves
screenshots.

    /usr/bin/python3 inspector_test.py <arena binary> <output dir>

Exit status: 0 passed, 1 failed, 77 skipped (Chromium, chromedriver or selenium missing: ctest
reports it as skipped, never as passed). With TESSERA_BROWSER_REQUIRED=1 in the environment
(`make test` sets it) a missing piece is a failure instead.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

SKIP = 77
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("CHROMEDRIVER", "/usr/bin/chromedriver")


def skip(reason):
    if os.environ.get("TESSERA_BROWSER_REQUIRED") == "1":
        print(f"FAIL: {reason} (TESSERA_BROWSER_REQUIRED=1)")
        sys.exit(1)
    print(f"SKIP: {reason} (make browser-deps installs it)")
    sys.exit(SKIP)


try:
    from selenium import webdriver
    from selenium.common.exceptions import (ElementNotInteractableException,
                                            NoSuchElementException,
                                            StaleElementReferenceException,
                                            TimeoutException, WebDriverException)
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import WebDriverWait
except ImportError:
    skip(f"selenium is not installed for {sys.executable} (Debian: python3-selenium)")


class Failed(Exception):
    pass


def check(condition, message):
    if not condition:
        raise Failed("check failed: " + message)


def start_arena(arena):
    """Starts the arena; returns the process and its inspector's URL (from the line it prints)."""
    child = subprocess.Popen([arena, "--units", "400", "--frames", "1000000", "--workers", "2",
                              "--inspect", "0"], stdout=subprocess.PIPE, text=True)
    found = {}

    def read():
        for line in child.stdout:  # keeps draining, so the arena never blocks on its pipe
            m = re.search(r"inspector: (http://\S+)", line)
            if m and "url" not in found:
                found["url"] = m.group(1)

    threading.Thread(target=read, daemon=True).start()
    deadline = time.monotonic() + 60
    while "url" not in found:
        if child.poll() is not None:
            raise Failed(f"the arena exited (status {child.returncode}) before serving")
        if time.monotonic() > deadline:
            raise Failed("the arena printed no inspector URL in 60 s")
        time.sleep(0.05)
    return child, found["url"]


def api_get(base, path):
    """GET an API path: (status, JSON body)."""
    try:
        with urllib.request.urlopen(base.rstrip("/") + path, timeout=10) as r:
            return r.status, json.load(r)
    except urllib.error.HTTPError as e:
        return e.code, json.load(e)


def start_browser():
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--window-size=1400,900"):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    # Collects the page's uncaught errors (playwright's "pageerror"), from before its script runs.
    driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": """
        window.__errors = [];
        window.addEventListener("error", (e) => window.__errors.push(String(e.message)));
        window.addEventListener("unhandledrejection", (e) => window.__errors.push(String(e.reason)));
    """})
    return driver


def wait(driver, condition, timeout=30, message=""):
    """Waits for condition(driver) to be truthy; a stale element (the page redraws every second)
    just means: look again."""
    return WebDriverWait(driver, timeout, poll_frequency=0.05,
                         ignored_exceptions=(StaleElementReferenceException,)).until(
        condition, message)


def text_of(driver, css):
    return driver.execute_script(
        "const e = document.querySelector(arguments[0]); return e ? e.textContent : null;", css)


def retry_stale(fn, tries=10):
    """Calls fn, again when the element it used was replaced by a live redraw meanwhile (stale,
    or caught mid-redraw and not interactable)."""
    for i in range(tries):
        try:
            return fn()
        except (StaleElementReferenceException, ElementNotInteractableException):
            if i == tries - 1:
                raise
            time.sleep(0.05)


# The canvas's pixels around each (x, y): for each point, the largest difference (sum over RGB)
# from the map's background in a (2r+1)^2 square.
PIXELS_JS = """
const [points, r] = arguments;
const c = document.getElementById("map"), ctx = c.getContext("2d");
const img = ctx.getImageData(0, 0, c.width, c.height).data;
return points.map(([x, y]) => {
  let best = 0;
  for (let dy = -r; dy <= r; ++dy) for (let dx = -r; dx <= r; ++dx) {
    const px = Math.round(x) + dx, py = Math.round(y) + dy;
    if (px < 0 || py < 0 || px >= c.width || py >= c.height) continue;
    const i = 4 * (py * c.width + px);
    best = Math.max(best, Math.abs(img[i] - 15) + Math.abs(img[i + 1] - 18) + Math.abs(img[i + 2] - 22));
  }
  return best;
});
"""

# Redraws the map and, at the same time, asks the API for the same points, until both answers
# come from the same frame (one `update` answers every request queued before it), so the API's
# positions are exactly those of the world the page drew.
REDRAW_JS = """
const done = arguments[arguments.length - 1];
(async () => {
  for (let i = 0; i < 30; ++i) {
    const [drawn, api] = await Promise.all([
      window.__map.refresh().then(() => window.__map.data),
      // (Another URL, uncached: Chrome would hold an identical request until the first ends.)
      fetch(window.__map.query + "&probe=" + i, { cache: "no-store" }).then((r) => r.json())]);
    if (drawn.frame === api.frame) {
      const c = document.getElementById("map");
      return { drawn, api, view: window.__map.view, width: c.width, height: c.height, tries: i + 1 };
    }
  }
  return { error: "the page's answer and the API's never came from the same frame" };
})().then(done, (e) => done({ error: String(e) }));
"""


def set_live(driver, on):
    box = driver.find_element(By.CSS_SELECTOR, "#live")
    if box.is_selected() != on:
        box.click()
    if not on:
        time.sleep(1.2)  # a refresh already under way ends


def screen_points(snap):
    """The API's points on the canvas, by the page's view: {entity id: (sx, sy)}."""
    api, view = snap["api"], snap["view"]
    out = {}
    for k in range(api["count"]):
        x, y = api["points"][3 * k], api["points"][3 * k + 1]
        if x is None or y is None:
            continue
        sx = (x - view["cx"]) * view["scale"] + snap["width"] / 2
        sy = (y - view["cy"]) * view["scale"] + snap["height"] / 2
        if 6 <= sx < snap["width"] - 6 and 6 <= sy < snap["height"] - 6:
            out[f'{api["entities"][2 * k]}:{api["entities"][2 * k + 1]}'] = (sx, sy)
    return out


def check_map(driver, base, out_dir):
    """The map tab: the arena's units drawn at the positions the API gives; a click opens one."""
    driver.find_element(By.CSS_SELECTOR, 'nav button[data-tab="map"]').click()
    wait(driver, lambda d: d.execute_script(
        "return !!(window.__map.data && window.__map.data.count > 50);"),
         message="the map loads its points")
    axes = driver.execute_script(
        "return [document.getElementById('map-x').value, document.getElementById('map-y').value];")
    check(axes == ["arena::Position.x", "arena::Position.y"],
          f"the map's default axes are the arena's Position: {axes}")
    field = driver.find_element(By.CSS_SELECTOR, "#map-with")
    field.clear()
    field.send_keys("arena::Unit", Keys.ENTER)
    wait(driver, lambda d: "with=arena%3A%3AUnit" in d.execute_script("return window.__map.query;"),
         message="the map applies its filter")
    time.sleep(1.5)  # a live refresh: the battle moved
    driver.save_screenshot(os.path.join(out_dir, "inspector-map.png"))

    set_live(driver, False)
    snap = driver.execute_async_script(REDRAW_JS)
    check("error" not in snap, f"the map redraws: {snap.get('error')}")
    api = snap["api"]
    check(api["x"] == "arena::Position.x" and api["total"] == api["count"] and api["count"] > 50,
          f"the API gives every unit's position ({api['count']} of {api['total']})")
    on_canvas = screen_points(snap)
    check(len(on_canvas) > 50, f"units on the canvas: {len(on_canvas)}")
    ids = list(on_canvas)
    drawn = driver.execute_script(PIXELS_JS, [on_canvas[i] for i in ids], 2)
    hits = sum(1 for v in drawn if v > 60)
    if hits < len(ids):
        print("not drawn where the API says:", [(i, on_canvas[i]) for i, v in zip(ids, drawn)
                                                if v <= 60][:10], flush=True)
    check(hits == len(ids), f"the map draws {hits} of {len(ids)} units where the API says")
    # ... and nothing far from every unit.
    pts = list(on_canvas.values())
    empty = []
    for gy in range(20, snap["height"] - 20, 37):
        for gx in range(20, snap["width"] - 20, 41):
            if all((gx - x) ** 2 + (gy - y) ** 2 > 14 ** 2 for x, y in pts):
                empty.append((gx, gy))
    blank = driver.execute_script(PIXELS_JS, empty, 1)
    stray = sum(1 for v in blank if v > 60)
    check(len(empty) > 20 and stray <= 0.05 * len(empty),
          f"{stray} of {len(empty)} spots far from every unit are drawn on")
    print(f"map (same frame after {snap['tries']} tries): {hits} of {len(ids)} units drawn "
          "where the API says; "
          f"{stray} of {len(empty)} empty spots drawn on", flush=True)

    # Click a unit that stands alone, and its entity opens (units die: then try another).
    canvas = driver.find_element(By.CSS_SELECTOR, "#map")
    opened = None
    alone = [i for i in ids if all(j == i or (on_canvas[i][0] - on_canvas[j][0]) ** 2 +
                                   (on_canvas[i][1] - on_canvas[j][1]) ** 2 > 12 ** 2 for j in ids)]
    check(alone, "a unit stands alone on the map")
    for entity in alone[:5]:
        sx, sy = on_canvas[entity]
        ActionChains(driver).move_to_element_with_offset(
            canvas, round(sx - snap["width"] / 2), round(sy - snap["height"] / 2)).click().perform()
        try:
            wait(driver, lambda d: text_of(d, "#detail-id") == entity, timeout=5,
                 message=f"clicking {entity} on the map opens it")
        except TimeoutException:
            status, _ = api_get(base, "/api/entity/" + entity)
            if status == 404:  # it died meanwhile
                driver.find_element(By.CSS_SELECTOR, 'nav button[data-tab="map"]').click()
                continue
            raise
        check(not driver.find_element(By.CSS_SELECTOR, "#tab-entities").get_attribute(
            "class").count("hidden"), "the entity view is shown")
        opened = entity
        break
    check(opened is not None, "a click on the map opened a unit")
    print("clicked", opened, "on the map: the entity view shows it", flush=True)
    set_live(driver, True)


def check_charts(driver):
    """The systems tab's charts fill as frames pass."""
    def samples(d, css):
        n = d.execute_script(
            "const c = document.querySelector(arguments[0]); return c ? c.dataset.samples : null;",
            css)
        return int(n) if n else 0
    def last_frame(d):
        n = d.execute_script("return document.getElementById('chart-frame').dataset.lastFrame;")
        return int(n) if n else 0
    # Frame times are kept from the start (the last 300 frames): the chart moves on.
    wait(driver, lambda d: samples(d, "#chart-frame") >= 5, message="the frame-time chart fills")
    first = last_frame(driver)
    wait(driver, lambda d: last_frame(d) > first + 10, timeout=15,
         message="the frame-time chart moves on as frames pass")
    for css in ("#chart-entities", "#chart-archetypes"):
        check(samples(driver, css) > 0, css + " has samples")
    # System times are recorded from the moment the tab asks for them: the chart fills.
    wait(driver, lambda d: samples(d, 'canvas.spark[data-system="move"]') >= 5, timeout=15,
         message="the move system's chart fills")
    move = samples(driver, 'canvas.spark[data-system="move"]')
    wait(driver, lambda d: samples(d, 'canvas.spark[data-system="move"]') > move + 10, timeout=15,
         message="the move system's chart grows as frames pass")
    print("charts: frame time", samples(driver, "#chart-frame"), "samples, move",
          samples(driver, 'canvas.spark[data-system="move"]'), flush=True)


def run(arena, out_dir):
    child, base = start_arena(arena)
    driver = None
    try:
        print("arena inspector at", base, flush=True)
        driver = start_browser()
        driver.get(base)

        # Live stats: the frame counter moves.
        def frame(d):
            text = text_of(d, "#s-frame") or ""
            return int(text) if text.isdigit() else 0
        wait(driver, lambda d: frame(d) > 0, message="the frame counter shows a frame")
        f0 = frame(driver)
        wait(driver, lambda d: frame(d) > f0, timeout=10, message="the frame counter moves")

        # Filter: units (with Unit), without the weapons' components.
        for css, value in (("#with", "arena::Unit"), ("#without", "arena::Weapon")):
            field = driver.find_element(By.CSS_SELECTOR, css)
            field.clear()
            field.send_keys(value)
        driver.find_element(By.CSS_SELECTOR, "#apply").click()
        wait(driver, lambda d: d.execute_script("""
            const items = document.querySelectorAll("#entity-list li");
            return items.length > 0 && [...items].every((li) => li.textContent.includes("Unit"));"""),
             message="the list shows only units")
        listed = driver.execute_script(
            "return [...document.querySelectorAll('#entity-list li')].map((li) => li.dataset.id);")
        status, filtered = api_get(base, "/api/entities?with=arena::Unit&without=arena::Weapon&limit=1000")
        check(status == 200, "the filtered list loads")
        units = {e["id"] for e in filtered["entities"]}
        known = sum(1 for i in listed if i in units)
        check(known >= len(listed) / 2,
              f"the page lists units ({known} of {len(listed)} still listed by the API)")

        # Open a unit, edit Unit.speed in the page, check the world through the API. Units can
        # die meanwhile: then try the next one.
        edited = None
        value = 7.25
        speed_css = '#detail input[data-component="arena::Unit"][data-path="speed"]'
        tried = set()
        for _ in range(10):
            # The list as it is now (units die and change tables, so it moves on).
            now = driver.execute_script(
                "return [...document.querySelectorAll('#entity-list li')].map((li) => li.dataset.id);")
            entity = next((i for i in now if i not in tried), None)
            if entity is None:
                break
            tried.add(entity)
            try:
                retry_stale(lambda: driver.find_element(
                    By.CSS_SELECTOR, f'#entity-list li[data-id="{entity}"]').click())
                wait(driver, lambda d: d.find_elements(By.CSS_SELECTOR, speed_css), timeout=5)

                def type_value():
                    field = driver.find_element(By.CSS_SELECTOR, speed_css)
                    field.clear()
                    field.send_keys(str(value), Keys.ENTER)
                retry_stale(type_value)
                wait(driver, lambda d: d.find_elements(By.CSS_SELECTOR, speed_css + ".saved"),
                     timeout=5)
            except (TimeoutException, WebDriverException) as e:
                # The unit died, or the list moved under the click: try the next.
                print(f"no edit of {entity}: {type(e).__name__}", flush=True)
                continue
            status, body = api_get(base, "/api/entity/" + entity)
            if status == 404:
                continue  # died right after the edit
            unit = next(c for c in body["components"] if c["name"] == "arena::Unit")
            speed = next(f for f in unit["fields"] if f["path"] == "speed")["value"]
            check(speed == value, f"Unit.speed of {entity} is {speed} in the world, expected {value}")
            edited = entity
            break
        check(edited is not None, "an entity was edited through the page")
        print("edited arena::Unit.speed of", edited, "through the page", flush=True)
        driver.save_screenshot(os.path.join(out_dir, "inspector-entities.png"))

        # A bad edit shows an error and changes nothing.
        hp_css = '#detail input[data-component="arena::Health"][data-path="hp"]'
        if driver.find_elements(By.CSS_SELECTOR, hp_css):
            def type_bad():
                field = driver.find_element(By.CSS_SELECTOR, hp_css)
                field.clear()
                field.send_keys("1.5", Keys.ENTER)  # not an integer
            try:
                retry_stale(type_bad)
            except NoSuchElementException:
                # The panel lost the field between the two lookups: the unit died meanwhile
                # (the page then shows the API's 404), which the arena does all the time (more
                # so under a sanitizer's timing). Anything else is a failure.
                status, _ = api_get(base, "/api/entity/" + edited)
                check(status == 404, "the Health field vanished from a living unit's panel")
                print("the unit died before the bad edit: that check is skipped", flush=True)
            else:
                # The message, not the input's class: a live refresh may redraw the input
                # meanwhile.
                wait(driver, lambda d: "can't take" in (text_of(d, "#msg") or ""), timeout=5,
                     message="the page shows the API's error for a bad edit")

        check_map(driver, base, out_dir)

        # Archetypes: a table row per archetype, with the unit table among them.
        driver.find_element(By.CSS_SELECTOR, 'nav button[data-tab="archetypes"]').click()
        wait(driver, lambda d: len(d.find_elements(By.CSS_SELECTOR, "#archetype-rows tr")) > 1,
             message="the archetype table fills")
        check("Unit" in (text_of(driver, "#archetype-rows") or ""),
              "the archetype table names components")
        driver.save_screenshot(os.path.join(out_dir, "inspector-archetypes.png"))

        # Systems: one row per system with a bar, times filled in.
        driver.find_element(By.CSS_SELECTOR, 'nav button[data-tab="systems"]').click()
        wait(driver, lambda d: len(d.find_elements(
            By.CSS_SELECTOR, "#system-rows tr[data-system] .bar")) >= 5,
             message="the systems view fills")
        systems = driver.execute_script(
            "return [...document.querySelectorAll('#system-rows tr[data-system]')]"
            ".map((r) => r.dataset.system);")
        check("move" in systems and "attack" in systems,
              f"the systems view lists the arena's systems: {systems}")
        check_charts(driver)
        driver.save_screenshot(os.path.join(out_dir, "inspector-systems.png"))

        errors = driver.execute_script("return window.__errors;")
        check(not errors, "no JavaScript errors: " + "; ".join(errors or []))
        print("PASS: filtered, opened, edited through the page; the map drew and opened units; "
              "archetypes shown; the charts filled")
    finally:
        if driver is not None:
            driver.quit()
        child.terminate()
        try:
            child.wait(timeout=10)
        except subprocess.TimeoutExpired:
            child.kill()


def main():
    if len(sys.argv) < 2:
        print("usage: inspector_test.py <arena binary> <output dir>", file=sys.stderr)
        return 2
    arena, out_dir = sys.argv[1], (sys.argv[2] if len(sys.argv) > 2 else ".")
    if not os.path.exists(CHROMIUM):
        skip(f"no Chromium at {CHROMIUM} (Debian: chromium)")
    global CHROMEDRIVER
    if not os.path.exists(CHROMEDRIVER):
        if "CHROMEDRIVER" in os.environ or not shutil.which("chromedriver"):
            skip(f"no chromedriver at {CHROMEDRIVER} (Debian: chromium-driver)")
        CHROMEDRIVER = shutil.which("chromedriver")
    os.makedirs(out_dir, exist_ok=True)
    try:
        run(arena, out_dir)
    except (Failed, TimeoutException, WebDriverException) as e:
        print("FAIL:", getattr(e, "msg", None) or e)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
