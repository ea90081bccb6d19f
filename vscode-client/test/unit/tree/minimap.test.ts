import { strict as assert } from 'assert';
import {
  anchorView, centreOn, clampRect, contains, fitScale, growRect, MINIMAP, minimapFor, minimapPoint, minimapSize, panBy, revealBelow, visibleBox,
} from '../../../src/tree/minimap';

const close = (a: number, b: number, eps = 1e-6) => assert.ok(Math.abs(a - b) < eps, `${a} != ${b}`);

describe('tree view geometry and the minimap', () => {
  const natural = { x: 0, y: 0, w: 4000, h: 1000 };
  const pane = { w: 580, h: 318 };

  it('shows a viewBox widened to the pane\'s shape, as "meet" draws it', () => {
    const v = visibleBox({ x: 100, y: 0, w: 400, h: 400 }, { w: 800, h: 400 }); // 2 px per unit, the pane twice as wide
    assert.deepEqual(v, { x: -100, y: 0, w: 800, h: 400 });
    assert.equal(fitScale({ w: 400, h: 400 }, { w: 800, h: 400 }), 1);
    assert.equal(fitScale({ w: 0, h: 0 }, { w: 800, h: 400 }), 1); // nothing drawn yet: no division by zero
  });

  it('is hidden while the pane shows the whole tree, shown once it does not', () => {
    assert.equal(minimapFor(natural, natural, pane), undefined); // Fit
    assert.equal(minimapFor({ x: -500, y: -500, w: 8000, h: 2000 }, natural, pane), undefined); // zoomed out past it
    const m = minimapFor({ x: 1000, y: 200, w: 500, h: 300 }, natural, pane);
    assert.ok(m);
    assert.ok(contains(natural, m.rect));
    assert.equal(minimapFor({ x: 1000, y: 200, w: 500, h: 300 }, natural, { w: 0, h: 0 }), undefined); // a hidden pane
  });

  it('keeps the tree\'s shape within its largest size and a share of the pane', () => {
    const s = minimapSize({ w: 4000, h: 1000 }, pane);
    assert.ok(s);
    assert.ok(s.w <= MINIMAP.maxW && s.w <= pane.w * MINIMAP.paneShareW + 1 && s.h <= MINIMAP.maxH);
    close(s.w / s.h, 4, 0.1);
    // a long flat tree of 1000 attempts: a strip still tall enough to click
    const flat = minimapSize({ w: 18000, h: 300 }, { w: 1200, h: 700 });
    assert.ok(flat && flat.h >= MINIMAP.minSide && flat.w === MINIMAP.maxW);
    assert.equal(minimapSize({ w: 4000, h: 1000 }, { w: 90, h: 60 }), undefined); // a tiny pane: no room to spare
  });

  it('draws the view\'s rectangle inside the tree, a few pixels at least', () => {
    assert.deepEqual(clampRect({ x: -10, y: 5, w: 50, h: 2000 }, natural), { x: 0, y: 5, w: 40, h: 995 });
    assert.deepEqual(clampRect({ x: 5000, y: 10, w: 50, h: 50 }, natural), { x: 4000, y: 10, w: 0, h: 50 });
    assert.deepEqual(growRect({ x: 4000, y: 10, w: 0, h: 50 }, 100, natural), { x: 3900, y: 0, w: 100, h: 100 });
    const m = minimapFor({ x: 2000, y: 500, w: 10, h: 5 }, natural, pane);
    assert.ok(m);
    const px = fitScale(natural, m.size);
    assert.ok(m.rect.w * px >= MINIMAP.minRectPx - 1e-9 && m.rect.h * px >= MINIMAP.minRectPx - 1e-9);
  });

  it('turns a click in the minimap into the tree point under it, and centres the view there', () => {
    // a 200x100 minimap drawing a 4000x1000 tree: 0.05 px per unit, 25 px bands above and below
    const rect = { left: 300, top: 200, width: 200, height: 100 };
    assert.deepEqual(minimapPoint(400, 250, rect, natural), { x: 2000, y: 500 });
    assert.deepEqual(minimapPoint(300, 225, rect, natural), { x: 0, y: 0 });
    assert.deepEqual(minimapPoint(0, 0, rect, natural), { x: 0, y: 0 }); // outside: the nearest point
    assert.deepEqual(minimapPoint(1000, 1000, rect, natural), { x: 4000, y: 1000 });
    assert.deepEqual(centreOn({ x: 0, y: 0, w: 400, h: 200 }, { x: 2000, y: 500 }), { x: 1800, y: 400, w: 400, h: 200 });
    assert.deepEqual(panBy({ x: 0, y: 0, w: 400, h: 200 }, 0.25, -0.5), { x: 100, y: -100, w: 400, h: 200 });
  });

  it('keeps a node at the same place on screen when the tree is redrawn around it', () => {
    const view = { x: 100, y: 50, w: 580, h: 318 }; // 1 px per unit
    // the node was drawn at pane pixel (290, 159); in the new drawing it is at tree point (900, 400)
    const v = anchorView(view, pane, { x: 900, y: 400 }, { x: 290, y: 159 });
    assert.deepEqual(v, { x: 610, y: 241, w: 580, h: 318 });
    // and "meet" with a pane of another shape: the point lands where it was
    const wide = { w: 1160, h: 318 };
    const at = { x: 700, y: 100 };
    const w = anchorView(view, wide, { x: 900, y: 400 }, at);
    const s = fitScale(w, wide);
    close((900 - w.x) * s + (wide.w - w.w * s) / 2, at.x);
    close((400 - w.y) * s + (wide.h - w.h * s) / 2, at.y);
  });

  it('moves the view up to show a subtree opened near the bottom edge, never losing its top', () => {
    const view = { x: 0, y: 0, w: 580, h: 318 }; // 1 px per unit in the pane: rows 0..318 shown
    assert.deepEqual(revealBelow(view, pane, 100, 100, 20), view); // fits: unmoved
    assert.deepEqual(revealBelow(view, pane, 250, 100, 20), { ...view, y: 52 }); // 250 + 100 + 20 - 318
    assert.deepEqual(revealBelow(view, pane, 250, 1000, 20), { ...view, y: 230 }); // too deep: the top row stays, 20 below the edge
  });
});
