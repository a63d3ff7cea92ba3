-- CreateIndex
CREATE INDEX "review_links_expires_at_idx" ON "review_links"("expires_at");
