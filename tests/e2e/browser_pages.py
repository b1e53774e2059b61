#!/usr/bin/python3
# Loads rbmemtrace's HTML pages in Debian's headless Chromium (chromium-driver, python3-selenium)
# from disk with the network off, acts on each as a person would (a click on a column's header,
# on a frame, a search, the bytes switch, the series' range) and prints what the rendered
# document then holds, as JSON, for test_html.rb to hold against the traced program's own truth.
# One browser for every page (its start is most of the time).
#   browser_pages.py SPEC.json   -> {"pages": [{...observations...}, ...]}
# SPEC: {"pages": [{"path", "zoom": frame name, "search": text, "screenshot": PNG path,
#                   "cohort": [t0, t1, t2] (a series' period indices)}, ...]}
import json
import sys

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By


def browser():
    o = webdriver.ChromeOptions()
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
              "--window-size=1300,1100", "--no-first-run", "--disable-extensions",
              "--disable-background-networking", "--proxy-server=127.0.0.1:9"):
        o.add_argument(a)
    o.binary_location = "/usr/bin/chromium"
    d = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=o)
    d.execute_cdp_cmd("Network.enable", {})
    d.execute_cdp_cmd("Network.emulateNetworkConditions", {
        "offline": True, "latency": 0, "downloadThroughput": 0, "uploadThroughput": 0})
    # Anything the page's data could make run would call one of these: counted, never shown.
    d.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": """
        window.__calls = [];
        for (const f of ['alert', 'confirm', 'prompt', 'open'])
          window[f] = function () { window.__calls.push(f); };"""})
    return d


def column(d, table_id, i):
    return d.execute_script(
        "var id = arguments[0], i = arguments[1];"
        "return Array.from(document.querySelectorAll('#' + id + ' tbody tr'))"
        ".map(function (tr) { return tr.children[i].textContent; });", table_id, i)


def click_header(d, table_id, title):
    for i, th in enumerate(d.find_elements(By.CSS_SELECTOR, "#%s thead th" % table_id)):
        if th.text.replace("\u25B2", "").replace("\u25BC", "").strip() == title:
            th.click()
            return i, th.get_attribute("aria-sort")
    return None, None


def safety(d):
    return d.execute_script("""
        return {
          title: document.title,
          calls: window.__calls,
          scripts: document.scripts.length,
          imgs: document.getElementsByTagName('img').length,
          handlers: Array.from(document.querySelectorAll('*')).filter(function (e) {
            return Array.from(e.attributes).some(function (a) { return /^on/i.test(a.name); });
          }).length,
          links: document.querySelectorAll('a[href], [src]').length,
          text: document.body.innerText,
          resources: performance.getEntriesByType('resource').map(function (r) { return r.name; })
        };""")


def icicle(d, page, out):
    out["frames"] = d.execute_script("return document.querySelectorAll('#icicle g.frame').length")
    out["frame_names"] = d.execute_script(
        "return Array.from(document.querySelectorAll('#icicle g.frame'))"
        ".map(function (g) { return g.getAttribute('data-name'); })")
    if page.get("zoom"):
        for g in d.find_elements(By.CSS_SELECTOR, "#icicle g.frame"):
            if g.get_attribute("data-name") == page["zoom"]:
                d.execute_script("arguments[0].dispatchEvent(new MouseEvent('click'))", g)
                break
        out["focus"] = d.find_element(By.ID, "icicle").get_attribute("data-focus")
        out["zoom_root_width"] = d.execute_script(
            "var r = document.querySelector('#icicle g.frame rect');"
            "return r ? Number(r.getAttribute('width')) : 0")
        d.find_element(By.ID, "reset").click()
    if page.get("search"):
        box = d.find_element(By.ID, "search")
        box.send_keys(page["search"])
        out["matches"] = d.execute_script(
            "return Array.from(document.querySelectorAll('#icicle g.match'))"
            ".map(function (g) { return g.getAttribute('data-name'); })")
        out["search_status"] = d.find_element(By.ID, "search-status").text
    d.find_element(By.ID, "measure-bytes").click()
    out["bytes_crumbs"] = d.find_element(By.ID, "crumbs").text


def table_sort(d, table_id, title, out):
    i, first = click_header(d, table_id, title)
    if i is None:
        return
    out["sort"] = {"column": title, "first": first, "after_first": column(d, table_id, i)}
    _, second = click_header(d, table_id, title)
    out["sort"].update(second=second, after_second=column(d, table_id, i))
    out["names_after_sort"] = column(d, table_id, 0)


def series(d, out):
    out["series_lines"] = d.execute_script(
        "return Array.from(document.querySelectorAll('#series-chart polyline'))"
        ".map(function (p) { return p.getAttribute('data-class'); })")
    if not out["series_lines"]:
        return
    out["periods"] = len(d.find_elements(By.CSS_SELECTOR, "#t0 option"))
    out["holder_lines"] = d.execute_script(
        "return Array.from(document.querySelectorAll('#holders-chart polyline'))"
        ".map(function (p) { return p.getAttribute('data-holder'); })")
    out["range"] = {}
    for row in d.find_elements(By.CSS_SELECTOR, "#range-table tbody tr"):
        cells = [c.text for c in row.find_elements(By.TAG_NAME, "td")]
        out["range"][cells[0]] = cells[1]


def cohort(d, page, out):
    """The range chosen as a person would (each select set, a change event), then the table."""
    if not d.find_elements(By.ID, "t2"):
        out["cohort"] = None
        return
    for sel, k in zip(("t0", "t1", "t2"), page["cohort"]):
        d.execute_script("var s = document.getElementById(arguments[0]); s.value = arguments[1];"
                         "s.dispatchEvent(new Event('change'))", sel, str(k))
    rows = {}
    for row in d.find_elements(By.CSS_SELECTOR, "#cohort-table tbody tr"):
        cells = [c.text for c in row.find_elements(By.TAG_NAME, "td")]
        rows[cells[0]] = cells[1]
    out["cohort"] = {"title": d.find_element(By.ID, "cohort-title").text, "rows": rows}


def observe(d, page):
    d.get("file://" + page["path"])
    out = {"path": page["path"],
           "ready": d.execute_script("return document.body.getAttribute('data-ready')")}
    out["kind"] = d.execute_script(
        "return JSON.parse(document.getElementById('rbm-data').textContent).kind")
    if d.find_elements(By.ID, "icicle"):
        icicle(d, page, out)
    if d.find_elements(By.ID, "series-chart"):
        series(d, out)
        if page.get("cohort"):
            cohort(d, page, out)
    for table_id, title in (("classes", "retained"), ("classes", "live"), ("diff-0", "retained change")):
        if d.find_elements(By.ID, table_id) and "sort" not in out:
            table_sort(d, table_id, title, out)
    if d.find_elements(By.ID, "diff-0"):
        out["diff_names"] = column(d, "diff-0", 0)
    out["safety"] = safety(d)
    out["injected"] = d.execute_script("return window.__injected === 1")
    if page.get("screenshot"):
        d.find_element(By.ID, "reset").click() if d.find_elements(By.ID, "reset") else None
        d.execute_script("window.scrollTo(0, 0)")
        d.save_screenshot(page["screenshot"])
    return out


def main():
    spec = json.load(open(sys.argv[1]))
    d = browser()
    try:
        print(json.dumps({"pages": [observe(d, p) for p in spec["pages"]]}))
    finally:
        d.quit()


main()
